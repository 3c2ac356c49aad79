"""Deprecated alias: `terravis.prompts` moved to `terravis.pack` (the prompt pack of every package)."""
from vlmjudge._moved import alias_module
alias_module(__name__, "terravis.pack")
