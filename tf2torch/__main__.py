"""``python -m tf2torch``."""

from .cli import run

run()
