"""The package's layering, read from the source: which top-level unit (subpackage or module of ``tf2torch``)
imports which, counting imports inside functions too (a function-local import is still a dependency: it
only hides a cycle until the function runs). ``TYPE_CHECKING`` imports are not dependencies.

The order is written in ``docs/architecture.md`` ("Layers"); ``LAYERS`` below is that order. Two rules:
an import never reaches a higher layer, and the units form no cycle (not even inside one layer).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tf2torch"

# low -> high; a unit may import its own layer and the ones below
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer.split()) for layer in (
    # value objects and the torch-only runtime library (generated files carry it; families' helpers too)
    # (<root>: the package's __init__, loaded before any of its modules; it reaches api only on attribute access)
    "errors dtypes spec interface plan pages blas strided keras_names runtime families.runtime <root>",
    "families families.builder",  # keras-hub: discovery, and its saved arguments -> a Keras graph config
    "readers",  # sources -> ModelSpec
    "map",  # selection, matching, accounting, the report
    "options",  # ConvertOptions (loads a rules file through map)
    # converters, lowering, patching, rendering, writing
    "layers families.converters codegen rewrite tfgraph tflite userfile write",
    "pipelines hf",  # the modes
    "compare summary progress",  # verify, inspect's summary, the progress bar
    "api",
    "cli __main__",
))

def _unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] == "families":  # a family is a vertical slice: each file sits in its role's layer
        name = parts[-1]
        for role in ("builder", "converters", "runtime"):
            if name.startswith(role) or (role == "builder" and name in ("args", "functional", "keras_layers")):
                return f"families.{role}"
        return "families"  # the packages and their discovery (imports nothing of tf2torch)
    return parts[1] if len(parts) > 1 else "<root>"


def _imports() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("").parts
        is_package = path.name == "__init__.py"
        module = ".".join(rel[:-1] if is_package else rel)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        typing_only = {id(n) for node in ast.walk(tree)
                       if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test)
                       for stmt in node.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom):
                base = module.split(".")[:len(module.split(".")) - node.level + is_package] if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                # ``from package import module`` depends on that module, not just on the package
                targets = [f"{target}.{a.name}" if _is_module(f"{target}.{a.name}") else target for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] == "tf2torch" and _unit(target) != _unit(module):
                    edges[_unit(module)].add(_unit(target))
    return edges


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _layer(unit: str) -> int:
    found = [i for i, layer in enumerate(LAYERS) if unit in layer]
    assert found, f"tf2torch.{unit} is in no layer: add it to LAYERS here and to docs/architecture.md"
    return found[0]


def _cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one unit (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return found


def test_no_import_reaches_a_higher_layer() -> None:
    edges = _imports()
    upward = sorted((a, b) for a, bs in edges.items() for b in bs if _layer(b) > _layer(a))
    print(f"{sum(map(len, edges.values()))} imports between units; against the order: {upward}")
    assert not upward, f"imports from a lower layer to a higher one: {upward} (docs/architecture.md, 'Layers')"


def test_no_cycle_between_units() -> None:
    cycles = [sorted(c) for c in _cycles(_imports())]
    print("cycles:", cycles)
    assert not cycles, f"import cycles between tf2torch units: {cycles}"


def test_every_unit_has_a_layer() -> None:
    units = {_unit(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts))
             for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE}
    for unit in sorted(units | {"<root>"}):
        _layer(unit)


def test_no_module_imports_another_modules_private_names() -> None:
    """A name with a leading underscore is its module's own: another module that needs it gets a public name,
    so what a module offers is what it says it offers (``from .rnn import _params`` hid seven such ties)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                found += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {a.name} from {node.module}"
                          for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    print(f"{len(found)} private imports")
    assert not found, "\n".join(found)
