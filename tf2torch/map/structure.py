"""Structural matching: align what names could not pair by the shape of the two trees.

A TF-slim ResNet (``block1/unit_1/bottleneck_v1/conv1/weights``, BatchNorm under each conv's scope)
and a torchvision-style port (``layer1.0.conv1.weight``, ``layer1.0.bn1.weight``) share no names, but
the same tree: blocks of units of convs, each followed by its norm. Both sides become trees of
*groups* (the variables of one layer; a TF ``X/BatchNorm`` scope is its own group, owned by ``X``),
and trees are aligned top-down:

1. two nodes pair only when the multisets of their parameters' (role, shape) agree (shapes compared
   as sorted dims without 1s, so a layout's transpose or a (1, n) row does not hide a pair);
2. children pair in order when the counts and every pair's signature agree; else containers are
   opened one level, groups with a unique signature pair, a norm group pairs through the layer that
   owns it, and groups of one repeated signature pair in order (block and unit order);
3. anything left over fails the whole subtree: nothing there is paired.

The real layout and shape check happens afterwards in ``match.take``: a wrong pair would show up as a
shape mismatch (an error), never as a silent success.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .names import WRAPPER_SCOPES, split_tf, tokens
from .structure_check import consistent, in_sequence, numbered

_NATURAL = re.compile(r"(\d+)")
_MAX_NODES = 200_000  # a bound on the work: beyond it, structure is not tried


def _natural(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in _NATURAL.split(name))


def _dims(shape: tuple[int, ...], tf: bool) -> tuple:
    """A parameter's shape up to layout: its sizes without 1s, and for a 2-D/3-D conv kernel its window
    in order (a 1x3 and a 3x1 conv differ; TF keeps the window first, torch last)."""
    window = tuple(shape[:-2] if tf else shape[2:]) if len(shape) in (4, 5) else ()
    return tuple(sorted(d for d in shape if d != 1)), (window if any(w != 1 for w in window) else ())


@dataclass
class Node:
    name: str
    leaves: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)  # role -> (id, shape)
    children: list[Node] = field(default_factory=list)
    norm: bool = False  # a norm group (BatchNorm / LayerNorm ...): paired through its owner
    owner: Node | None = None
    tf: bool = False  # a source (TF-layout) node
    parent: Node | None = None

    def signature(self) -> Counter:
        sig: Counter = Counter((role, _dims(shape, self.tf)) for role, (_, shape) in self.leaves.items())
        for child in self.children:
            sig.update(child.signature())
        return sig

    def groups(self) -> list[Node]:
        """This subtree's groups (nodes with leaves), in order."""
        out = [self] if self.leaves else []
        for child in self.children:
            out += child.groups()
        return out


def _child(node: Node, name: str) -> Node:
    for c in node.children:
        if c.name == name:
            return c
    c = Node(name, tf=node.tf, parent=node)
    node.children.append(c)
    return c


def source_tree(items: list[tuple[str, str, tuple[int, ...]]], ordered: bool) -> Node:
    """(variable name, role, shape) -> tree; a wrapper scope (``X/BatchNorm``) becomes a norm group
    placed right after ``X`` and owned by it. ``ordered``: the items come in creation order (a .meta
    graph, a Keras file), which is kept; else children are put in natural name order."""
    root = Node("", tf=True)
    for name, role, shape in items:
        parts = split_tf(name)[:-1]
        node = root
        for i, part in enumerate(parts):
            if "".join(tokens(part)) in WRAPPER_SCOPES and i > 0:
                owner = node
                parent = root
                for p in parts[:i - 1]:
                    parent = _child(parent, p)
                node = _child(parent, f"{parts[i - 1]}/{part}")
                node.norm, node.owner = True, owner
            else:
                node = _child(node, part)
        node.leaves[role] = (name, shape)
    _scale_free_norms(root)
    _sort(root, ordered)
    return root


def _scale_free_norms(node: Node) -> None:
    """A TF batch norm built with scale=False (TF-slim's Inception) stores no gamma; it still meets a
    torch BatchNorm, whose weight is then filled with ones (``plan.onto_model``): a leaf with no source."""
    if {"bias", "running_mean", "running_var"} <= set(node.leaves) and "weight" not in node.leaves:
        node.leaves["weight"] = ("", node.leaves["bias"][1])
    for child in node.children:
        _scale_free_norms(child)


def _sort(node: Node, ordered: bool) -> None:
    """Creation order, or natural order (unit_2 before unit_10); each wrapper group right after its
    owner either way."""
    position = {id(c): i for i, c in enumerate(node.children)}
    owners = {c.name: position[id(c)] for c in node.children}

    def key(c: Node) -> tuple:
        head = c.name.split("/")[0]
        if ordered:
            return (owners.get(head, position[id(c)]) if "/" in c.name else position[id(c)], "/" in c.name)
        return (_natural(head), "/" in c.name)

    node.children.sort(key=key)
    for c in node.children:
        _sort(c, ordered)


def torch_tree(items: list[tuple[str, str, tuple[int, ...], bool]]) -> Node:
    """(key, role, shape, is_norm) in registration order -> tree; a norm module is owned by the group
    registered just before it in its parent (conv1 -> bn1, downsample.0 -> downsample.1)."""
    root = Node("")
    for key, role, shape, is_norm in items:
        node = root
        for part in key.split(".")[:-1]:
            node = _child(node, part)
        node.leaves[role] = (key, shape)
        node.norm = is_norm
    _owners(root)
    return root


def _owners(node: Node) -> None:
    previous = None
    for c in node.children:
        if c.norm and c.leaves and previous is not None:
            c.owner = previous
        if c.leaves and not c.norm:
            previous = c
        _owners(c)


def _unwrap(node: Node) -> Node:
    """Skip scopes that only wrap one child (``resnet_v1_50/``, ``bottleneck_v1/``)."""
    while not node.leaves and len(node.children) == 1:
        node = node.children[0]
    return node


def align(source: Node, target: Node, ordered: bool) -> dict[str, str]:
    """Source variable name -> target key, for the subtrees that align (see the module docstring).
    Without a known source order (a TF1 checkpoint without its .meta), groups of one repeated
    signature are never paired: their order would be a guess."""
    pairs: dict[str, str] = {}
    _pair(_unwrap(source), _unwrap(target), pairs, 0, ordered)
    return pairs if consistent(source, target, pairs) else {}


def _pair(s: Node, t: Node, pairs: dict[str, str], depth: int, ordered: bool) -> bool:
    if depth > 64 or s.signature() != t.signature():
        return False
    if s.leaves or t.leaves:
        if not (s.leaves and t.leaves) or set(s.leaves) != set(t.leaves):
            return _pair_groups(s.groups(), t.groups(), pairs, ordered)
        for role, (name, _) in s.leaves.items():
            if name:  # "" is a scale-free norm's missing gamma: nothing to pair
                pairs[name] = t.leaves[role][0]
        return True
    sc, tc = [_unwrap(c) for c in s.children], [_unwrap(c) for c in t.children]
    # Children pair in order when none of them look alike, or when the port keeps them in a sequence
    # (numbered: blocks, units) and the source's creation order is known; same-looking siblings of a
    # plain module (a unit's shortcut and conv3) are left to _pair_groups, which wants names for them.
    distinct = len({_key(c) for c in sc}) == len(sc)
    sequence = numbered(t)
    if len(sc) == len(tc) and (distinct or (ordered and sequence)) \
            and all(a.signature() == b.signature() for a, b in zip(sc, tc)):
        trial: dict[str, str] = {}
        if all(_pair(a, b, trial, depth + 1, ordered) for a, b in zip(sc, tc)):
            pairs.update(trial)
            return True
    return _pair_groups(s.groups(), t.groups(), pairs, ordered)


def _key(node: Node) -> tuple:
    return tuple(sorted(node.signature().items()))


def _pair_groups(sg: list[Node], tg: list[Node], pairs: dict[str, str], ordered: bool) -> bool:
    """Pair two equal multisets of groups: unique signatures, then repeated layers in order, then
    norms through the layers that own them. All or nothing."""
    if Counter(_key(g) for g in sg) != Counter(_key(g) for g in tg):
        return False
    matched: dict[int, Node] = {}
    by_key_s: dict[tuple, list[Node]] = defaultdict(list)
    by_key_t: dict[tuple, list[Node]] = defaultdict(list)
    for g in sg:
        by_key_s[_key(g)].append(g)
    for g in tg:
        by_key_t[_key(g)].append(g)
    for key, group in by_key_s.items():
        if len(group) == 1:
            matched[id(group[0])] = by_key_t[key][0]
    for key, group in by_key_s.items():  # layers of one repeated signature
        if len(group) > 1 and not any(g.norm for g in group):
            found = _repeated(group, by_key_t[key], ordered)
            if found is None:
                return False
            matched.update(found)
    for key, group in by_key_s.items():  # norms through the layer that owns them
        if len(group) > 1 and any(g.norm for g in group):
            for g in (g for g in group if g.norm):
                owner_pair = matched.get(id(g.owner)) if g.owner is not None else None
                found = [t for t in by_key_t[key] if t.owner is not None and t.owner is owner_pair]
                if len(found) != 1:
                    return False  # a norm whose owner did not pair: its place is not known
                matched[id(g)] = found[0]
            # the rest of that signature (norms owning no layer, slim's "preact"): in order
            taken = {id(v) for v in matched.values()}
            rest = [g for g in group if id(g) not in matched]
            if rest and not ordered:
                return False
            matched.update((id(a), b) for a, b in zip(rest, [t for t in by_key_t[key] if id(t) not in taken]))
    if len(matched) != len(sg) or len({id(v) for v in matched.values()}) != len(tg):
        return False
    for g in sg:
        t = matched[id(g)]
        if set(g.leaves) != set(t.leaves):
            return False
    for g in sg:
        t = matched[id(g)]
        for role, (name, _) in g.leaves.items():
            if name:
                pairs[name] = t.leaves[role][0]
    return True


def _repeated(sources: list[Node], targets: list[Node], ordered: bool) -> dict[int, Node] | None:
    """Pair layers of one signature. In different blocks or branches (each its own parent in the source)
    they pair in creation order: block and unit order is the network's; so do source siblings whose
    counterparts the port keeps in one sequence (an nn.Sequential: its order is the execution order,
    VGG's ``features``, an Inception branch).
    Other siblings (slim's shortcut and conv3 in a ResNet-50's first unit: both 1x1, 64 -> 256, the
    shortcut created first, torchvision's ``downsample`` registered last) pair only by equal names,
    then a single pair left over; anything else is not known (None)."""
    if not ordered:
        return None
    tentative = {id(a): b for a, b in zip(sources, targets)}
    siblings: dict[int, list[Node]] = defaultdict(list)
    for g in sources:
        siblings[id(g.parent)].append(g)
    if all(len(group) == 1 or in_sequence([tentative[id(g)] for g in group]) for group in siblings.values()):
        return tentative
    found: dict[int, Node] = {}
    left = list(targets)
    for g in sources:
        same = [t for t in left if tokens(t.name) == tokens(g.name.split("/")[0])]
        if len(same) == 1:
            found[id(g)] = same[0]
            left.remove(same[0])
    rest = [g for g in sources if id(g) not in found]
    if len(rest) == 1 and len(left) == 1:
        found[id(rest[0])] = left[0]
    return found if len(found) == len(sources) else None


def too_big(n_sources: int, n_targets: int) -> bool:
    return n_sources + n_targets > _MAX_NODES
