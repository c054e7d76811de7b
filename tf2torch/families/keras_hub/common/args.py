"""keras-hub models: the constructor arguments in a ``Backbone.save()`` file, expanded into the
Functional graph keras-hub builds from them (``functional.py``), one builder per model class, each in its
family's ``builder*.py`` (``tf2torch/families/keras_hub/<family>/``).

    @builds("BertBackbone")
    def bert(args: Args) -> dict: ...   # the {"class_name", "config": {"layers", ...}} entry

A keras-hub class with no builder stays refused by name (``keras_config``); a builder reads every
argument it depends on through ``Args``, which refuses values of the wrong type and arguments the
builder does not know (a newer keras-hub's option would otherwise be silently ignored).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ....errors import FormatError, UnsupportedError
from .functional import GraphTooLarge

PREFIX = "keras_hub>"
_BUILDERS: dict[str, Callable[[Args], dict[str, Any]]] = {}
# Arguments every keras-hub model takes that do not change its graph.
_IGNORED = frozenset({"name", "trainable", "dtype"})


class Args:
    """A model's saved constructor arguments, read with checks (the file is data, never trusted)."""

    def __init__(self, class_name: str, config: Mapping[str, Any], where: str) -> None:
        self.class_name, self.config, self.where = class_name, config, where
        self.read: set[str] = set(_IGNORED)

    def fail(self, key: str, expected: str) -> FormatError:
        found = repr(self.config.get(key))  # (a Task's backbone argument is a whole serialized model)
        found = found if len(found) <= 120 else found[:117] + "..."
        return FormatError(f"{self.where}: {self.class_name} argument {key!r} should be {expected}, found "
                           f"{found}; the file was not written by keras-hub")

    def int(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(key, f"an integer >= {minimum}")
        return value

    def float(self, key: str, default: float | None = None) -> float:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, "a number")
        return float(value)

    def bool(self, key: str, default: bool | None = None) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "true or false")
        return value

    def str(self, key: str, default: str | None = None, choices: tuple[str, ...] = ()) -> str:
        value = self._get(key, default)
        if not isinstance(value, str) or (choices and value not in choices):
            raise self.fail(key, f"one of {', '.join(choices)}" if choices else "a string")
        return value

    def number(self, key: str, default: float | None = None) -> int | float:
        """A number as saved (an int stays an int: the graph config keeps what keras-hub passes on)."""
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, "a number")
        return value

    def raw(self, key: str, default: Any = None) -> Any:
        """The value as saved, or ``default`` when absent (the caller checks it)."""
        self.read.add(key)
        return self.config.get(key, default)

    @property
    def name(self) -> str:
        name = self.config.get("name")
        return name if isinstance(name, str) and name else self.class_name

    @property
    def dtype(self) -> Any:
        return self.config.get("dtype")

    def check_all_read(self) -> None:
        unknown = sorted(k for k in self.config if k not in self.read)
        if unknown:
            raise UnsupportedError(
                f"{self.where}: {self.class_name} has argument(s) {', '.join(unknown)} that tf2torch's builder "
                "does not know (a newer keras-hub?); converting without them could compute something else, "
                "so tf2torch refuses; write the weights alone with --weights-only")

    def _get(self, key: str, default: Any) -> Any:
        self.read.add(key)
        if key not in self.config:
            if default is None:
                raise self.fail(key, "present")
            return default
        return self.config[key]


def builds(*class_names: str) -> Callable[[Callable[[Args], dict[str, Any]]], Callable[[Args], dict[str, Any]]]:
    def register(fn: Callable[[Args], dict[str, Any]]) -> Callable[[Args], dict[str, Any]]:
        for name in class_names:
            if name in _BUILDERS:
                raise RuntimeError(f"two builders for keras-hub class {name!r}")
            _BUILDERS[name] = fn
        return fn

    return register


def supported() -> list[str]:
    _load()
    return sorted(_BUILDERS)


def expand(entry: Any, where: str) -> Any:
    """``entry`` with every keras-hub model that has a builder replaced by its Functional graph."""
    if isinstance(entry, list):
        return [expand(e, where) for e in entry]
    if not isinstance(entry, Mapping):
        return entry
    registered = entry.get("registered_name")
    if isinstance(registered, str) and registered.startswith(PREFIX) and isinstance(entry.get("config"), Mapping):
        _load()
        builder = _BUILDERS.get(registered[len(PREFIX):])
        config = entry["config"]
        if builder is not None and "layers" not in config:
            args = Args(registered[len(PREFIX):], config, where)
            try:
                built = builder(args)
            except GraphTooLarge as exc:
                raise FormatError(f"{where}: {args.class_name}: {exc}; the file is corrupt or hostile") from None
            args.check_all_read()
            return built
    return {k: expand(v, where) for k, v in entry.items()}


def _load() -> None:
    """Every family's builders register themselves on import; the families are found by walking the package."""
    from ..discover import load

    load("builder")
