"""rewrite stage."""
