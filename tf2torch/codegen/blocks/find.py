"""Find the repeated blocks of a Keras graph by its layer names (``nest`` then makes each a graph of its own).

Model builders name a block's layers with one prefix: ``block2a_expand_conv`` … ``block2a_add``
(EfficientNet), ``conv3_block2_1_conv`` … ``conv3_block2_out`` (ResNet). A *run* is a maximal stretch of
layers in saved order whose names share their first ``depth`` ``_``-separated words. Runs whose layers,
wiring and configs agree up to numbers (widths, kernels, strides) are candidates for one block class;
``codegen/blocks/template.py`` then checks the generated code really is one class with arguments.
Layers Keras named itself (``re_lu_3``, ``add_12``) carry no block's name: they join the run they sit in,
or the run they finish (Xception's residual ``add_3`` right after ``block5_sepconv3_bn``).

Names only propose: a run is nested only if it is a sound sub-graph (its layers called once, nothing outside
it both fed by it and feeding it), so a name that lies costs readability, never correctness.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ...spec import GraphSpec, LayerSpec
from .nest import local_name, nest

# Keys that change nothing at inference, so blocks that differ only there are still one kind.
_IGNORED = ("name", "trainable", "seed")
_IGNORED_SUFFIXES = ("_initializer", "_regularizer", "_constraint")
_WORDS = re.compile(r"[A-Za-z0-9_]+")  # a name that can propose a block (others are taken as they are)


@dataclass(frozen=True)
class Run:
    prefix: str  # the layers' common name prefix, without the trailing "_"
    start: int  # graph.layers[start:stop]
    stop: int
    signature: tuple = ()


def _key(layer: LayerSpec, depth: int) -> str | None:
    words = layer.name.split("_")
    if not _eligible(layer) or auto_named(layer) or len(words) <= depth or not all(words[:depth]) \
            or not _WORDS.fullmatch(layer.name):
        return None
    return "_".join(words[:depth])


def auto_named(layer: LayerSpec) -> bool:
    """Named by Keras itself (``re_lu_3``, ``add``): such a name says nothing about blocks. Keras 3 records
    op layers inside a block so (MobileNetV3's hard-swish ``add_12``, ``multiply``)."""
    if layer.class_name in ("TFOpLambda", "SlicingOpLambda"):  # tf_keras records tf.* calls so: "tf.math.add_3"
        return True
    cls = re.split(r"[>.]", layer.class_name)[-1]  # Keras 3 op layers: "keras.src.ops.numpy>Add"
    snake = re.sub(r"([a-z])([A-Z])", r"\1_\2", re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", cls)).lower()
    return re.fullmatch(rf"{re.escape(snake)}(_\d+)?", layer.name) is not None


def _runs(layers: tuple[LayerSpec, ...], a: int, b: int, depth: int) -> list[Run]:
    """Maximal runs in ``layers[a:b]`` of two or more layers named with one prefix of ``depth`` words,
    Keras-named layers between them included."""
    runs, i = [], a
    while i < b:
        key = _key(layers[i], depth)
        if key is None:
            i += 1
            continue
        last, j = i, i + 1
        while j < b and _eligible(layers[j]):
            if _key(layers[j], depth) == key:
                last = j
            elif not auto_named(layers[j]):
                break
            j += 1
        if last > i:
            runs.append(Run(key, i, last + 1))
        i = last + 1
    return runs


def _eligible(layer: LayerSpec) -> bool:
    return layer.class_name != "InputLayer" and layer.graph is None and len(layer.calls) == 1


def _masked(value: Any) -> Any:
    """A config with every number replaced: blocks of one kind differ in widths, kernels and strides."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return "#"
    if isinstance(value, (list, tuple)):
        return tuple(_masked(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _masked(v)) for k, v in value.items()
                            if k not in _IGNORED and not str(k).endswith(_IGNORED_SUFFIXES)))
    return repr(type(value))


class _Graph:
    """The layers' wiring, for sound-run checks."""

    def __init__(self, graph: GraphSpec) -> None:
        self.layers = graph.layers
        self.index = {layer.name: i for i, layer in enumerate(graph.layers)}
        self.readers: dict[str, set[int]] = {}
        for i, layer in enumerate(graph.layers):
            for call in layer.calls:
                for ref in call.inputs:
                    self.readers.setdefault(ref.layer, set()).add(i)
        self.outputs = {ref.layer for ref in graph.outputs}

    def sound(self, start: int, stop: int) -> bool:
        """No path leaves the run and comes back: the block is one call, between its inputs and readers."""
        inside = set(range(start, stop))
        seen: set[int] = set()
        todo = [r for i in inside for r in self.readers.get(self.layers[i].name, ()) if r not in inside]
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            for r in self.readers.get(self.layers[i].name, ()):
                if r in inside:
                    return False
                todo.append(r)
        return True

    def signature(self, prefix: str, start: int, stop: int) -> tuple:
        position = {self.layers[i].name: i - start for i in range(start, stop)}
        external: dict[tuple[str, int, int], int] = {}
        items = []
        for layer in self.layers[start:stop]:
            refs = tuple(("in", position[r.layer], r.node, r.index) if r.layer in position
                         else ("ext", external.setdefault((r.layer, r.node, r.index), len(external)))
                         for r in layer.calls[0].inputs)
            items.append((local_name(layer.name, prefix), layer.class_name, _masked(dict(layer.config)),
                          _masked(dict(layer.calls[0].kwargs)), refs))
        read_outside = tuple(sorted(position[self.layers[i].name] for i in range(start, stop)
                                    if self.layers[i].name in self.outputs
                                    or self.readers.get(self.layers[i].name, set()) - set(range(start, stop))))
        return (tuple(items), read_outside)


def _cost(kinds: dict[tuple, list[Run]], free: int) -> int:
    """Lines of generated code, roughly: three per flat layer (comment, constructor, forward line), a class
    per kind, two lines per instance."""
    return 3 * free + sum(3 * (runs[0].stop - runs[0].start) + 6 + 2 * len(runs) for runs in kinds.values())


def _worth(runs: list[Run]) -> bool:
    size = runs[0].stop - runs[0].start
    return len(runs) >= 2 and 3 * size + 6 + 2 * len(runs) < 3 * size * len(runs)


def _tail(layers: tuple[LayerSpec, ...], run: Run, bound: int) -> int:
    """The run's end extended over the Keras-named layers right after it that read what it computes:
    Xception names a block's layers ``block5_*`` but its residual ``add_3``."""
    inside = {layer.name for layer in layers[run.start:run.stop]}
    stop = run.stop
    while stop < bound and _eligible(layers[stop]) and auto_named(layers[stop]) \
            and any(ref.layer in inside for ref in layers[stop].calls[0].inputs):
        inside.add(layers[stop].name)
        stop += 1
    return stop


def _kinds(wiring: _Graph, spans: list[tuple[str, int, int]]) -> list[Run]:
    """The sound spans whose kind repeats (and is worth a class)."""
    kinds: dict[tuple, list[Run]] = {}
    for prefix, start, stop in spans:
        if wiring.sound(start, stop):
            sig = wiring.signature(prefix, start, stop)
            kinds.setdefault(sig, []).append(Run(prefix, start, stop, sig))
    return [r for runs in kinds.values() if _worth(runs) for r in runs]


def _plan_from(wiring: _Graph, depth: int, deepest: int, exclude: frozenset[str],
               taken: set[str]) -> tuple[int, list[Run]]:
    """Runs from ``depth`` down: a run whose kind repeats becomes a block; the others are searched one
    word deeper. Returns (estimated lines, runs)."""
    layers = wiring.layers
    free = [(0, len(layers))]
    chosen: list[Run] = []
    for d in range(depth, deepest + 1):
        candidates = [(run, b) for a, b in free for run in _runs(layers, a, b, d)]
        twice = {p for p, n in Counter(r.prefix for r, _ in candidates).items() if n > 1}  # one name, two places
        usable = [(r, b) for r, b in candidates if r.prefix not in exclude and r.prefix not in taken
                  and r.prefix not in twice]
        # first with the Keras-named layers after a run that finish it (a residual add), then without
        accepted = _kinds(wiring, [(r.prefix, r.start, _tail(layers, r, b)) for r, b in usable
                                   if _tail(layers, r, b) > r.stop])
        done = {r.start for r in accepted}
        accepted += _kinds(wiring, [(r.prefix, r.start, r.stop) for r, _ in usable if r.start not in done])
        chosen += accepted
        starts = {r.start for r in accepted}
        free = [(r.start, r.stop) for r, _ in candidates if r.start not in starts]  # searched one word deeper
    in_blocks = sum(r.stop - r.start for r in chosen)
    kinds_chosen: dict[tuple, list[Run]] = {}
    for r in chosen:
        kinds_chosen.setdefault(r.signature, []).append(r)
    return _cost(kinds_chosen, len(layers) - in_blocks), sorted(chosen, key=lambda r: r.start)


def plan(graph: GraphSpec, exclude: frozenset[str] = frozenset()) -> list[Run]:
    """The runs to nest: the start depth whose plan has the fewest estimated lines (none, if flat is best)."""
    if any(layer.class_name == "Masking" or layer.config.get("mask_zero") is True for layer in graph.layers):
        return []  # a Keras mask is a local of the forward that makes it: it cannot cross into a block
    if any(not layer.calls for layer in graph.layers if layer.class_name != "InputLayer"):
        return []
    wiring = _Graph(graph)
    taken = {layer.name for layer in graph.layers}
    deepest = max((len(layer.name.split("_")) - 1 for layer in graph.layers), default=0)
    best: tuple[int, list[Run]] = (3 * len(graph.layers), [])
    for depth in range(1, deepest + 1):
        found = _plan_from(wiring, depth, deepest, exclude, taken)
        if found[1] and found[0] < best[0]:
            best = found
    return best[1]


def nest_all(graph: GraphSpec, exclude: frozenset[str] = frozenset()) -> GraphSpec:
    """``nest`` on ``graph`` and on every model nested in it (a keras-hub Task's backbone)."""
    layers = tuple(layer if layer.graph is None else
                   LayerSpec(layer.name, layer.class_name, layer.config, layer.calls, layer.weights,
                             nest_all(layer.graph, exclude), layer.assets) for layer in graph.layers)
    if any(a is not b for a, b in zip(layers, graph.layers, strict=True)):
        graph = GraphSpec(graph.name, graph.class_name, layers, graph.inputs, graph.outputs, graph.keras_version,
                          graph.keras_release, graph.tf_inputs, graph.tf_outputs, graph.output_names)
    return nest(graph, plan(graph, exclude))
