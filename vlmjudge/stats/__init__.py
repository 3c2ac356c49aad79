"""Pure statistics on numpy and scipy, shared by the methods: functions of numbers, no model and no judge."""
