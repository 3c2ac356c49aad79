"""Deprecated alias: `regeneration.prompts` moved to `regeneration.pack` (the prompt pack of every package)."""
from vlmjudge._moved import alias_module
alias_module(__name__, "regeneration.pack")
