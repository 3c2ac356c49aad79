"""Deprecated alias: `viescore2.pipeline` moved to `viescore2.core` (the method class of every package)."""
from vlmjudge._moved import alias_module
alias_module(__name__, "viescore2.core")
