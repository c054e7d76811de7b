"""Checks on a structural pairing (``structure.py``), on the two trees' nodes (name, children, parent,
leaves): is a set of port groups one numbered sequence, and does a pairing respect both trees.

Kept apart from the alignment so that what is *accepted* reads on its own: a wrong pair is worse than
a missing one, and these are the last word before pairs by structure are taken.
"""

from __future__ import annotations

from typing import Any

Node = Any  # structure.Node (not imported: structure imports this module)


def in_sequence(targets: list[Node]) -> bool:
    """The targets' closest common ancestor numbers its children (an nn.Sequential / ModuleList)."""
    return numbered(_lca(targets))


def numbered(node: Node) -> bool:
    """A node whose children are numbered (an nn.Sequential / ModuleList: its order is its use)."""
    return bool(node.children) and all(c.name.isdigit() for c in node.children)


def _leaves(node: Node) -> dict[str, Node]:
    """Leaf id (variable name / state_dict key) -> its group, over a subtree."""
    out = {name: node for name, _ in node.leaves.values() if name}
    for child in node.children:
        out.update(_leaves(child))
    return out


def _ancestors(node: Node) -> list[Node]:
    chain = []
    while node is not None:
        chain.append(node)
        node = node.parent
    return chain


def _lca(nodes: list[Node]) -> Node:
    chains = [_ancestors(n)[::-1] for n in nodes]
    common = chains[0][0]
    for level in zip(*chains):
        if any(n is not level[0] for n in level):
            break
        common = level[0]
    return common


def consistent(source: Node, target: Node, pairs: dict[str, str]) -> bool:
    """The pairing must respect both trees: two sibling parts of the source (two branches, two units)
    may not land in one part of the port, unless that part is a numbered sequence the port flattened
    them into (VGG's ``features``). Pairs by position that would swap two same-shaped branches across
    an Inception block fail this, and then nothing is paired by structure."""
    keys = _leaves(target)

    def image(node: Node) -> Node | None:
        found = [keys[pairs[n]] for n in _leaves(node) if n in pairs and pairs[n] in keys]
        return _lca(found) if found else None

    def check(node: Node) -> bool:
        images = [(c, image(c)) for c in node.children]
        images = [(c, i) for c, i in images if i is not None]
        for k, (_, a) in enumerate(images):
            for _, b in images[k + 1:]:
                overlap = a is b or a in _ancestors(b) or b in _ancestors(a)
                shared = b if b in _ancestors(a) else a  # the higher of the two
                if overlap and not numbered(shared):
                    return False
        return all(check(c) for c, _ in images)

    return check(source)
