"""JSON read from input files: every failure, deep nesting included, is a one-line FormatError."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import FormatError

MAX_DEPTH = 200  # JSON nesting; a nested model adds ~5 levels, real configs stay below 50
_TOO_DEEP = object()


def load_json(text: str | bytes, where: str, what: str = "model.to_json() text") -> Any:
    """``json.loads`` for JSON read from a file: every failure, deep nesting included, is a FormatError.

    Python's parser raises RecursionError (not JSONDecodeError) on a few thousand nested brackets, and
    structures under that limit would still exhaust the stack of the recursive walks below.
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        found = f"{exc.msg} at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise FormatError(f"{where}: expected {what}, found invalid JSON ({found})") from None
    except RecursionError:
        data = _TOO_DEEP
    if data is _TOO_DEEP or not shallow(data):
        raise FormatError(f"{where}: expected {what}, found JSON nested over {MAX_DEPTH} levels deep "
                          "(corrupt or hostile)")
    return data


def shallow(value: Any) -> bool:
    """True when ``value`` nests at most MAX_DEPTH lists/dicts deep (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping | list):
            if depth > MAX_DEPTH:
                return False
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, Mapping) else item))
    return True
