"""``python -m tf2torch``."""

from .cli import main

main()
