"""Deprecated alias: `regeneration.loop` moved to `regeneration.core` (the method class of every package)."""
from vlmjudge._moved import alias_module
alias_module(__name__, "regeneration.core")
