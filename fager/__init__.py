"""fager: see README.md."""
