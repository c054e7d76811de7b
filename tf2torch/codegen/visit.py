"""Reading and rewriting the nodes of ``codegen/nodes.py``: what the passes (``lifetimes``, ``blocks``) and
the graph walker use — depth-first walks, copies with sub-nodes replaced, holes filled, locals renamed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from typing import Any

from .nodes import Assign, Call, Delete, Expr, Hole, Name, Ref, Self


def children(node: Any) -> Iterator[Any]:
    """The direct sub-nodes of a node, in source order (tuples of kwargs yield their values)."""
    for f in fields(node):
        value = getattr(node, f.name)
        if isinstance(value, (Expr, Assign, Delete)):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, Expr):
                    yield item
                elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Expr):
                    yield item[1]


def walk(node: Any) -> Iterator[Any]:
    """The node and every node below it, depth first, in source order."""
    yield node
    for child in children(node):
        yield from walk(child)


def transform(node: Any, fn: Callable[[Any], Any | None]) -> Any:
    """A copy of ``node`` with each sub-node for which ``fn`` returns a node replaced by it (top down:
    a replaced node's own children are not visited)."""
    done = fn(node)
    if done is not None:
        return done
    if not isinstance(node, (Expr, Assign, Delete)):
        return node
    changes = {}
    for f in fields(node):
        value = getattr(node, f.name)
        if isinstance(value, Expr):
            new = transform(value, fn)
        elif isinstance(value, tuple):
            new = tuple(transform(v, fn) if isinstance(v, Expr) else
                        (v[0], transform(v[1], fn)) if isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], Expr)
                        else v for v in value)
        else:
            continue
        if new is not value and new != value:
            changes[f.name] = new
    return replace(node, **changes) if changes else node


def fill(node: Any, holes: dict[str, Expr]) -> Any:
    """A converter's nodes with the holes named in ``holes`` filled (others stay: ``holes()`` finds them)."""
    return transform(node, lambda h: holes.get(h.key) if isinstance(h, Hole) else None)


def rename(node: Any, mapping: dict[str, str]) -> Any:
    """Locals renamed (``Name`` only: attributes, globals and strings are never touched)."""
    if not mapping:
        return node
    if isinstance(node, Assign):
        node = Assign(tuple(mapping.get(t, t) for t in node.targets), node.value)
    elif isinstance(node, Delete):
        return Delete(tuple(mapping.get(t, t) for t in node.names))
    return transform(node, lambda n: Name(mapping[n.id]) if isinstance(n, Name) and n.id in mapping else None)


def reads(node: Any) -> list[str]:
    """The locals a node reads, in order, with repeats (a ``Delete`` reads nothing)."""
    if isinstance(node, Delete):
        return []
    return [n.id for n in walk(node) if isinstance(n, Name)]


def holes(node: Any) -> list[str]:
    return [n.key for n in walk(node) if isinstance(n, Hole)]


def self_call(node: Any) -> str | None:
    """The attribute path of ``self.a.b(...)``, else None."""
    return node.func.path if isinstance(node, Call) and isinstance(node.func, Self) else None


def constructor(node: Expr) -> str:
    """The class a constructor node builds: ``nn.Conv2d`` of ``nn.Conv2d(3, 8, ...)``."""
    return node.func.path if isinstance(node, Call) and isinstance(node.func, Ref) else ""
