"""The runtime library: every definition tf2torch copies into a generated or patched ``model.py``.

One registry, one inliner. The registry is every top-level class, function and assignment of

* the modules of ``tf2torch/runtime/`` (the weight reader, Keras layer helpers, SAME padding, the patch
  rewrites, the user-file loader), and
* every ``runtime*.py`` of a family folder under ``tf2torch/families/`` (keras-hub's blocks),

found by walking those folders, so a new helper module is registered by existing. The files are read with
``ast``, never imported: they import torch, and converting to safetensors must not
(tests/test_lazy_imports.py). Generated files hold all helpers in one namespace, so a name defined in two
files is an error (``RuntimeLibraryError``), never a silent pick of one.

``inline(names)`` gives the sources of ``names`` and of everything they use, dependencies first: what a
definition uses is *computed* from the names its AST references, so converters name only the helper
their module calls, not the helpers that helper is built from.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parent.parent  # tf2torch/


class RuntimeLibraryError(RuntimeError):
    """The runtime library is inconsistent (a name defined twice, an unknown name asked for): a bug in
    tf2torch, not in the user's input."""


@dataclass(frozen=True)
class Definition:
    """One inlinable top-level definition."""

    name: str
    source: str  # its text as in the file (decorators included)
    path: Path
    line: int
    end: int  # its last line (adjacent assignments stay adjacent when inlined together)
    node: ast.stmt = field(compare=False, repr=False)  # its AST, for ``uses``
    value: Any = None  # an assignment's literal value (``constant``), else None

    @cached_property
    def uses(self) -> frozenset[str]:
        """Every identifier its AST references (filtered to the registry by ``deps``). Computed when first
        asked: a conversion's closure reaches a few dozen of the library's definitions, and walking every
        AST of the library was most of the ~0.25 s a generated model spent on the registry."""
        return frozenset(n.id for n in ast.walk(self.node) if isinstance(n, ast.Name)) - {self.name}


def runtime_files(root: Path = _PACKAGE) -> list[Path]:
    """The files of the library, in a fixed order (the order ties between dependencies are broken by)."""
    files = sorted(p for p in (root / "runtime").glob("*.py") if p.name != "__init__.py")
    families = root / "families"
    if families.is_dir():
        files += sorted(p for p in families.rglob("runtime*.py") if "__pycache__" not in p.parts)
    return files


def read_definitions(path: Path) -> list[Definition]:
    """A file's top-level definitions, in source order."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    found = []
    for node in ast.parse(text, str(path)).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names, value = [node.name], None
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            names, start = [t.id for t in node.targets if isinstance(t, ast.Name)], node.lineno
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None  # not a literal (a call, a dict of classes): inlinable, not a constant
        else:
            continue  # docstring, imports: the generated file's header has its own imports
        source = "".join(lines[start - 1:node.end_lineno]).rstrip()
        found += [Definition(name, source, path, start, node.end_lineno or start, node, value) for name in names]
    return found


def build_registry(files: Iterable[Path]) -> dict[str, Definition]:
    """Name -> definition over ``files``; a name defined in two files (or twice in one) raises."""
    registry: dict[str, Definition] = {}
    for path in files:
        for definition in read_definitions(path):
            earlier = registry.get(definition.name)
            if earlier is not None:
                raise RuntimeLibraryError(
                    f"{definition.name!r} is defined in {earlier.path}:{earlier.line} and in {definition.path}:"
                    f"{definition.line}; generated files share one namespace: rename one")
            registry[definition.name] = definition
    return registry


@cache
def registry() -> dict[str, Definition]:
    return build_registry(runtime_files())


def deps(name: str, defs: dict[str, Definition] | None = None) -> list[str]:
    """The library names ``name``'s definition references, in library order (file, then line)."""
    defs = registry() if defs is None else defs
    return _deps(name, defs, _file_order(defs))


def _file_order(defs: dict[str, Definition]) -> dict[Path, int]:
    return {path: i for i, path in enumerate(dict.fromkeys(d.path for d in defs.values()))}


def _deps(name: str, defs: dict[str, Definition], order: dict[Path, int]) -> list[str]:
    used = [defs[n] for n in defs[name].uses if n in defs]
    return [d.name for d in sorted(used, key=lambda d: (order[d.path], d.line))]


def closure(names: Iterable[str], defs: dict[str, Definition] | None = None) -> list[str]:
    """``names`` and everything they use, each once, every definition after the ones it uses; otherwise in
    the order asked (so a list already closed comes back unchanged)."""
    defs = registry() if defs is None else defs
    order = _file_order(defs)
    done: dict[str, None] = {}
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in done or name in visiting:
            return  # (a cycle, like two functions calling each other, needs no order at import time)
        if name not in defs:
            raise RuntimeLibraryError(f"no runtime definition named {name!r}; the runtime library has "
                                      "tf2torch/runtime/*.py and tf2torch/families/**/runtime*.py")
        visiting.add(name)
        for dep in _deps(name, defs, order):
            visit(dep)
        visiting.discard(name)
        done[name] = None

    for name in names:
        visit(name)
    return list(done)


def names_used(names: Iterable[str]) -> frozenset[str]:
    """Every identifier the definitions of ``names`` and their dependencies reference (``math``, ``F``, ...):
    what a file that inlines them must import."""
    defs = registry()
    return frozenset(u for name in closure(names, defs) for u in defs[name].uses)


def inline(names: Iterable[str]) -> list[str]:
    """The source text of ``names`` and their dependencies (``closure``), one string per definition."""
    defs = registry()
    return [defs[name].source for name in closure(names, defs)]


def inline_text(names: Iterable[str]) -> str:
    """``inline`` as one block, ending in a newline: two blank lines between definitions (PEP 8), none between
    definitions on consecutive lines of one file (a block of constants stays a block)."""
    defs = registry()
    chosen = [defs[name] for name in closure(names, defs)]
    parts = [chosen[0].source] if chosen else []
    for before, d in zip(chosen, chosen[1:]):
        adjacent = before.path == d.path and before.end + 1 == d.line
        parts += ["\n" if adjacent else "\n\n\n", d.source]
    return "".join(parts) + "\n"


def names_in(path: str) -> list[str]:
    """The definitions of a library file (``path`` inside tf2torch/, e.g. ``runtime/apply.py``) in source
    order: to copy a whole file, as patched models do with the rewrites."""
    where = _PACKAGE / path
    return [name for name, d in registry().items() if d.path == where]


def constant(name: str) -> Any:
    """A literal constant of the library (a family's runtime constants, read here so the builders and
    converters use the very value the generated helpers use, without importing torch)."""
    definition = registry().get(name)
    if definition is None or definition.value is None:
        raise RuntimeLibraryError(f"no literal runtime constant named {name!r}")
    return definition.value
