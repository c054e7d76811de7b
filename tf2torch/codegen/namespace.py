"""Safe identifiers for generated code: every name that comes from an input file goes through here.

A layer named ``x"); import os; os.system("…"); ("`` becomes ``x_import_os_os_system``: only
``[A-Za-z0-9_]`` survive, a leading digit gets a prefix, keywords/builtins/reserved names get a trailing
underscore, and duplicates are numbered. Strings that must reach the generated file as *data* (layer
names in comments or tables) go through ``repr`` in the emitter instead, never through here.
"""

from __future__ import annotations

import builtins
import keyword
import re

_ILLEGAL = re.compile(r"[^0-9A-Za-z_]+")
_MAX_LEN = 60

# Names the generated file itself uses at module level or inside forward().
GENERATED_GLOBALS = frozenset({"torch", "nn", "F", "math", "self", "build_model", "load_model", "Path", "json",
                               "struct", "WEIGHTS"})

# Attributes of torch.nn.Module (a submodule named "forward" or "training" would break the model).
MODULE_ATTRIBUTES = frozenset({
    "forward", "training", "train", "eval", "to", "cuda", "cpu", "half", "float", "double", "type", "apply",
    "modules", "children", "parameters", "buffers", "named_modules", "named_children", "named_parameters",
    "named_buffers", "state_dict", "load_state_dict", "register_buffer", "register_parameter", "add_module",
    "register_module", "get_submodule", "zero_grad", "requires_grad_", "extra_repr", "call_super_init",
    "dump_patches", "T_destination", "share_memory", "bfloat16", "ipu", "xpu", "mtia", "compile",
})


class Namespace:
    """Allocates unique, legal, non-reserved Python identifiers from arbitrary strings."""

    def __init__(self, reserved: frozenset[str] | set[str] = frozenset()) -> None:
        self._used: set[str] = set()
        self._reserved = set(reserved) | GENERATED_GLOBALS | set(dir(builtins)) | set(keyword.kwlist)
        self._reserved |= set(keyword.softkwlist)

    def create(self, candidate: str, fallback: str = "x") -> str:
        """A fresh identifier resembling ``candidate``."""
        base = _ILLEGAL.sub("_", candidate).strip("_")[:_MAX_LEN].rstrip("_") or fallback
        if base[0].isdigit():
            base = f"{fallback}_{base}"
        if base in self._reserved or base.startswith("__"):
            base = f"{base.strip('_')}_" if base.strip("_") else fallback
        name, n = base, 1
        while name in self._used or name in self._reserved:
            name = f"{base}_{n}"
            n += 1
        self._used.add(name)
        return name

    def __contains__(self, name: str) -> bool:
        return name in self._used


class ScopedNamespace:
    """Dotted attribute paths from TF scopes (``block2/unit_1/conv1`` -> ``block2.unit_1.conv1``): each
    scope becomes a plain ``nn.Module`` container, each component goes through a ``Namespace`` of its
    container (so it is a legal, unreserved, unique identifier there). A scope that is already a leaf
    (``conv1`` then ``conv1/BatchNorm``) ends the descent: the rest joins the leaf name
    (``conv1_BatchNorm``). Paths are at most ``MAX_DEPTH`` containers deep."""

    MAX_DEPTH = 8

    def __init__(self, reserved: frozenset[str] | set[str] = frozenset()) -> None:
        self._reserved = reserved
        self._spaces: dict[str, Namespace] = {"": Namespace(reserved)}
        self._scopes: dict[tuple[str, str], str] = {}  # (container, raw component) -> container path
        self._leaves: set[tuple[str, str]] = set()  # (container, raw component) taken by a leaf

    def create(self, candidate: str, fallback: str = "x") -> str:
        parts = [p for p in candidate.split("/") if p] or [fallback]
        parent, i = "", 0
        while i < len(parts) - 1 and parent.count(".") < self.MAX_DEPTH - 1:
            key = (parent, parts[i])
            if key in self._leaves:
                break
            if key not in self._scopes:
                name = self._spaces[parent].create(parts[i], "scope")
                path = f"{parent}.{name}" if parent else name
                self._scopes[key] = path
                self._spaces[path] = Namespace(self._reserved)
            parent = self._scopes[key]
            i += 1
        raw = "_".join(parts[i:])
        self._leaves.add((parent, parts[i]))
        leaf = self._spaces[parent].create(raw, fallback)
        return f"{parent}.{leaf}" if parent else leaf


def class_name(candidate: str) -> str:
    """A CamelCase class name from a Keras model name (``small_cnn`` -> ``SmallCnn``)."""
    words = [w for w in _ILLEGAL.sub(" ", candidate.replace("_", " ")).split() if w]
    name = "".join(w[:1].upper() + w[1:] for w in words)[:_MAX_LEN] or "Model"
    if name[0].isdigit():
        name = f"Model{name}"
    if keyword.iskeyword(name) or name in dir(builtins) or name in GENERATED_GLOBALS:
        name += "Model"
    return name
