"""terravis: see README.md."""
