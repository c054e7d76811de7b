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
from .nest import local_name, nest, snake

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
    words = layer.name.split("_")  # a layer named the prefix itself belongs too (MobileNet's conv_dw_1)
    if not _eligible(layer) or auto_named(layer) or len(words) < depth or not all(words[:depth]) \
            or not _WORDS.fullmatch(layer.name):
        return None
    return "_".join(words[:depth])


def auto_named(layer: LayerSpec) -> bool:
    """Named by Keras itself (``re_lu_3``, ``add``): such a name says nothing about blocks. Keras 3 records
    op layers inside a block so (MobileNetV3's hard-swish ``add_12``, ``multiply``)."""
    if layer.class_name in ("TFOpLambda", "SlicingOpLambda"):  # tf_keras records tf.* calls so: "tf.math.add_3"
        return True
    return re.fullmatch(rf"{re.escape(snake(layer.class_name))}(_\d+)?", layer.name) is not None


def _runs(layers: tuple[LayerSpec, ...], a: int, b: int, depth: int) -> list[Run]:
    """Maximal runs in ``layers[a:b]`` of layers named with one prefix of ``depth`` words, Keras-named
    layers between them included."""
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
        runs.append(Run(key, i, last + 1))  # one layer may still be a block with what Keras named around it
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

    def outputs_of(self, start: int, stop: int) -> int:
        """How many of the layers ``start:stop`` are read after them (or are model outputs)."""
        inside = set(range(start, stop))
        return sum(1 for i in inside if self.layers[i].name in self.outputs
                   or self.readers.get(self.layers[i].name, set()) - inside)

    def signature(self, prefix: str, start: int, stop: int) -> tuple:
        position = {self.layers[i].name: i - start for i in range(start, stop)}
        external: dict[tuple[str, int, int], int] = {}
        items = []
        for layer in self.layers[start:stop]:
            refs = tuple(("in", position[r.layer], r.node, r.index) if r.layer in position
                         else ("ext", external.setdefault((r.layer, r.node, r.index), len(external)))
                         for r in layer.calls[0].inputs)
            items.append((local_name(layer, prefix), layer.class_name, _masked(dict(layer.config)),
                          _masked(dict(layer.calls[0].kwargs)), refs))
        read_outside = tuple(sorted(position[self.layers[i].name] for i in range(start, stop)
                                    if self.layers[i].name in self.outputs
                                    or self.readers.get(self.layers[i].name, set()) - set(range(start, stop))))
        return (tuple(items), read_outside)


_CLASS_LINES = 10  # a class's own lines: class, docstring, __init__, super(), forward, return, blank lines
_MIN_LAYERS = 3  # a conv and its BatchNorm read better inline than as a class


def _kind_lines(runs: list[Run]) -> int:
    return 3 * (runs[0].stop - runs[0].start) + _CLASS_LINES + 2 * len(runs)


def _cost(kinds: dict[tuple, list[Run]], free: int) -> int:
    """Lines of generated code, roughly: three per flat layer (comment, constructor, forward line), a class
    per kind, two lines per instance."""
    return 3 * free + sum(_kind_lines(runs) for runs in kinds.values())


def _worth(runs: list[Run]) -> bool:
    size = runs[0].stop - runs[0].start
    return len(runs) >= 2 and size >= _MIN_LAYERS and _kind_lines(runs) < 3 * size * len(runs)


def _tail(wiring: _Graph, run: Run, bound: int) -> int:
    """The run's end extended over the Keras-named layers after it that finish it: up to the first merge
    after which the block has one output (Xception names a block ``block5_*`` but its residual ``add_3``;
    ``block3_*`` also leaves its shortcut's ``batch_normalization_1`` to Keras's names)."""
    layers = wiring.layers
    inside = {layer.name for layer in layers[run.start:run.stop]}
    stop = run.stop
    while stop < bound and _eligible(layers[stop]) and auto_named(layers[stop]) \
            and any(ref.layer in inside for ref in layers[stop].calls[0].inputs):
        inside.add(layers[stop].name)
        stop += 1
        if len(layers[stop - 1].calls[0].inputs) > 1 and wiring.outputs_of(run.start, stop) == 1:
            return stop
    return run.stop


def _head(wiring: _Graph, run: Run, bound: int) -> int:
    """The run's start extended back over the Keras-named layers before it, to the nearest point where the
    block has one input: Inception names a block's concat ``mixed1`` and its branches' convs ``conv2d_12`` …
    Each layer taken must be read inside the block only."""
    layers = wiring.layers
    inside = {layer.name for layer in layers[run.start:run.stop]}
    i = run.start - 1
    while i >= bound and _eligible(layers[i]) and auto_named(layers[i]) and layers[i].name not in wiring.outputs \
            and all(layers[r].name in inside for r in wiring.readers.get(layers[i].name, ())):
        inside.add(layers[i].name)
        feeds = {ref for layer in layers[i:run.stop] for ref in layer.calls[0].inputs if ref.layer not in inside}
        if len(feeds) == 1:
            return i
        i -= 1
    return run.start


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
        candidates = [(run, a, b) for a, b in free for run in _runs(layers, a, b, d)]
        twice = {p for p, n in Counter(r.prefix for r, _, _ in candidates).items() if n > 1}  # one name, two places
        usable = [(r, a, b) for r, a, b in candidates if r.prefix not in exclude and r.prefix not in twice
                  and (r.prefix not in taken or r.prefix in {x.name for x in layers[r.start:r.stop]})]
        # first with the Keras-named layers before and after a run that make it whole (its branches, a
        # residual add; a head never reaches into the run before it), then without
        extended, previous = [], 0
        for r, a, b in sorted(usable, key=lambda u: u[0].start):
            stop = _tail(wiring, r, b)
            start = _head(wiring, r, max(a, previous))
            previous = stop
            if (start, stop) != (r.start, r.stop):
                extended.append((r.prefix, start, stop))
        accepted = _kinds(wiring, extended)
        done = {r.prefix for r in accepted}
        accepted += _kinds(wiring, [(r.prefix, r.start, r.stop) for r, _, _ in usable if r.prefix not in done])
        chosen += accepted
        done = {r.prefix for r in accepted}
        free = [(r.start, r.stop) for r, _, _ in candidates if r.prefix not in done]  # searched one word deeper
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
    deepest = max((len(layer.name.split("_")) for layer in graph.layers), default=0)
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
