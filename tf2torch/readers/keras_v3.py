"""The Keras 3 weights layout (``.weights.h5``, and ``model.weights.h5`` inside ``.keras``).

The file mirrors Keras's object tree (``saving_lib._save_state``): the model's layers are
``layers/<snake_case(class)>[_<n>]/vars/<i>``, numbered per class in ``model.layers`` order (Functional
models list their InputLayers, Sequential models do not, ops such as ``x + 1`` are not layers); nested
models repeat ``layers/...`` inside their group; sublayers appear under their attribute name
(``multi_head_attention/query_dense/vars``); ``optimizer/vars/<i>`` is optimizer state. Keras >= 3.10
also tags each ``vars`` group with the owner's name; we check it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import h5py

from ..errors import FormatError
from ..keras_names import snake_case
from ..spec import GraphSpec, Role, Variable
from . import h5attrs, h5safe
from .h5load import LoaderFactory, variable
from .keras_config import layer_name


@dataclass(frozen=True)
class VarsGroup:
    """One Keras 3 ``vars`` group: the object path that owns it and its variables in index order."""

    path: str  # e.g. "layers/conv2d", "" for the model's own vars
    name: str | None  # the owner's ``name`` attribute (Keras >= 3.10 writes it)
    variables: tuple[Variable, ...]


_MAX_NESTING = 100  # group levels; Keras adds two per nested model, real files stay far below


def v3_vars_groups(f: h5py.File, label: str, factory: LoaderFactory) -> list[VarsGroup]:
    """Every ``vars`` group of a Keras 3 weights file, in Keras's save-walk order."""
    return list(_walk_v3(f, "", label, factory, set()))


def _walk_v3(
    group: h5py.Group, path: str, label: str, factory: LoaderFactory, seen: set[int]
) -> Iterator[VarsGroup]:
    # Keras writes a tree: each group under one name. A group hard-linked twice (an alias, or a link
    # to an ancestor making a cycle) would list weights twice or recurse forever; so would absurd depth.
    address = h5safe.address(group, label)
    if address in seen or path.count("/") >= _MAX_NESTING:
        raise FormatError(
            f"{label}: group '{group.name}' is linked twice or nested over {_MAX_NESTING} deep (a cycle or "
            "alias Keras never writes); the file is corrupt or hostile"
        )
    seen.add(address)
    names = h5safe.children(group, label)
    if h5safe.GROUP_VARS in names:
        yield _vars_group(group, path, label, factory)
    # Keras walks Functional/Sequential ``layers`` first, then attributes sorted with private
    # (``_``-prefixed) ones last; h5py lists names in byte order, so re-sort the same way.
    for name in sorted((n for n in names if n != h5safe.GROUP_VARS), key=_walk_key):
        if not h5safe.is_group(group, name):
            raise FormatError(
                f"{label}: expected only groups under '{group.name}', found '{name}'; the file is not a Keras weights file"
            )
        yield from _walk_v3(
            h5safe.get_group(group, name, label), f"{path}/{name}".lstrip("/"), label, factory, seen
        )


def _walk_key(name: str) -> tuple[int, str, int]:
    first = 0 if name in (h5safe.GROUP_LAYERS, h5safe.GROUP_LAYERS_KERAS_2_13) else 1
    base, _, num = name.rpartition("_")
    if base and num.isdigit():  # dense, dense_1, ..., dense_10 in creation order
        return (first, ("~" + base) if base.startswith("_") else base, int(num) + 1)
    return (first, ("~" + name) if name.startswith("_") else name, 0)


def _vars_group(parent: h5py.Group, path: str, label: str, factory: LoaderFactory) -> VarsGroup:
    group = h5safe.get_group(parent, h5safe.GROUP_VARS, label)
    names = h5safe.children(group, label)
    # Datasets are named "0".."n-1" in save order; h5py lists "10" before "2", so sort as numbers.
    if sorted(names) != sorted(str(i) for i in range(len(names))):
        raise FormatError(
            f"{label}: '{group.name}' should hold datasets 0..{len(names) - 1}, found {sorted(names)[:6]}"
        )
    owner = path.split("/", 1)[0] if path else ""
    role = Role.OPTIMIZER if owner == h5safe.GROUP_OPTIMIZER else Role.WEIGHT
    if owner not in ("", h5safe.GROUP_OPTIMIZER, h5safe.GROUP_LAYERS, h5safe.GROUP_LAYERS_KERAS_2_13):
        role = Role.BOOKKEEPING  # metrics, loss trackers, seed generators of the model itself
    name = h5attrs.read_attr_text(group, h5safe.ATTR_NAME, label)
    out = []
    for i in range(len(names)):
        ds_path = f"{path}/{h5safe.GROUP_VARS}/{i}".lstrip("/")
        note = (
            f"variable {i} of {'optimizer' if role is Role.OPTIMIZER else 'layer'} '{name}'" if name else ""
        )
        out.append(
            variable(h5safe.get_dataset(group, str(i), label), ds_path, label, factory, role, "", note)
        )
    return VarsGroup(path, name, tuple(out))


def attach_v3_weights(
    graph: GraphSpec, config: Mapping[str, Any], groups: list[VarsGroup], label: str,
    assets: Mapping[str, Mapping[str, bytes]] | None = None,
) -> tuple[GraphSpec, list[str]]:
    """Give each layer of ``graph`` the variables saved under its Keras 3 object path (and a ``.keras``
    archive's asset files under that same path, ``keras_assets.py``)."""
    by_path = {g.path: g for g in groups}
    claimed: set[str] = set()
    graph = _assign(graph, _entries(config), "", by_path, claimed, label, assets or {})
    container = _containers(by_path, "")[0] + "/"
    stray = [g.path for g in groups if g.variables and g.path not in claimed and g.path.startswith(container)]
    notes = (
        [
            f"variables under {', '.join(stray[:4])} match no layer of the config; they are listed but unassigned"
        ]
        if stray
        else []
    )
    return graph, notes


def _assign(
    graph: GraphSpec,
    entries: list[Any],
    prefix: str,
    by_path: dict[str, VarsGroup],
    claimed: set[str],
    label: str,
    assets: Mapping[str, Mapping[str, bytes]],
) -> GraphSpec:
    raw = {layer_name(e): e for e in entries if isinstance(e, Mapping)}
    container = _containers(by_path, prefix)[-1]
    used: dict[str, int] = {}
    layers = []
    for layer in graph.layers:
        entry = raw.get(layer.name)
        module = str(entry.get("module") or "") if entry else ""
        skip = entry is None or module.startswith("keras.src.ops")  # synthesised input, or an op
        skip = skip or (graph.class_name == "Sequential" and layer.class_name == "InputLayer")
        if skip:
            layers.append(layer)
            continue
        class_name = str(entry.get("class_name"))
        # The path is derived from the Python class; a few classes are saved under an export alias.
        base = snake_case(_PYTHON_CLASS.get(class_name, class_name), graph.keras_version)
        used[base] = used.get(base, -1) + 1
        path = f"{container}/{base}" + (f"_{used[base]}" if used[base] else "")  # saving_lib._get_unique_name
        owner = by_path.get(path)
        # A layer with no variables (an InputLayer Keras named "input_layer_3") has nothing to misplace; a layer
        # a keras-hub builder named after Keras's per-process counter takes the file's name for it.
        named_by_counter = bool(entry.get("__tf2torch_auto_named__"))
        if owner is not None and owner.variables and owner.name is not None and owner.name != layer.name \
                and not named_by_counter:
            raise FormatError(
                f"{label}: '{path}/vars' belongs to layer '{owner.name}', expected layer '{layer.name}'; "
                "the weights do not match config.json"
            )
        mine = [p for p in by_path if p == path or p.startswith(path + "/")]
        claimed.update(mine)
        weights = tuple(v for p in mine for v in by_path[p].variables)
        inner = (
            _assign(layer.graph, _entries(entry), path + "/", by_path, claimed, label, assets)
            if layer.graph
            else None
        )
        layers.append(replace(layer, weights=weights, graph=inner, assets=dict(assets.get(path, {}))))
    return replace(graph, layers=tuple(layers))


def _containers(by_path: Mapping[str, VarsGroup], prefix: str) -> tuple[str, ...]:
    # tf.keras 2.13 named the layer container ``_layer_checkpoint_dependencies``.
    legacy = f"{prefix}{h5safe.GROUP_LAYERS_KERAS_2_13}"
    if any(p.startswith(legacy + "/") for p in by_path):
        return (legacy,)
    return (f"{prefix}{h5safe.GROUP_LAYERS}",)


def _entries(entry: Mapping[str, Any]) -> list[Any]:
    """The raw layer entries of a serialized model (Keras <= 2.2 Sequential: a bare list)."""
    inner = entry.get("config")
    if isinstance(inner, list):
        return inner
    layers = inner.get("layers") if isinstance(inner, Mapping) else None
    return layers if isinstance(layers, list) else []


_PYTHON_CLASS = {"GroupQueryAttention": "GroupedQueryAttention"}  # config name -> the class weights are saved by
