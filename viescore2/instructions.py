"""Deprecated alias: `viescore2.instructions` moved to `viescore2.pack` (the prompt pack of every package)."""
from vlmjudge._moved import alias_module
alias_module(__name__, "viescore2.pack")
