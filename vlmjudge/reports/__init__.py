"""The shared parts of every method's HTML report: the page (`page`) and its figures (`figures`)."""
