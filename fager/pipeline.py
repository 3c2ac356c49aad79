"""Deprecated alias: `fager.pipeline` moved to `fager.core` (the method class of every package)."""
from vlmjudge._moved import alias_module
alias_module(__name__, "fager.core")
