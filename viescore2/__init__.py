"""viescore2: see README.md."""
