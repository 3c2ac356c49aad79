from vlmjudge._moved import alias_module
alias_module(__name__, "vlmjudge.faces")
