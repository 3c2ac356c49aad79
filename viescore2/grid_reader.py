"""Deprecated alias: `viescore2.grid_reader` moved into `viescore2.parsing` (the text reading of every package)."""
from vlmjudge._moved import alias_module
alias_module(__name__, "viescore2.parsing")
