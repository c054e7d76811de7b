"""map stage."""
