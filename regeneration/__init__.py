"""regeneration: see README.md."""
