"""Keras HDF5 files: legacy ``.h5`` (full model or ``save_weights``) and Keras 3 ``.weights.h5``.

Legacy layout (tf_keras and Keras 3's legacy writer alike)::

    /                      attrs keras_version, backend, model_config (JSON; full model only)
    /model_weights         attr layer_names (full model; weights-only files keep it on the root)
    /model_weights/<layer> attr weight_names: dataset paths relative to this group
    /model_weights/top_level_model_weights   weights the model owns itself (not in layer_names)
    /optimizer_weights     attr weight_names, datasets at those relative paths

Keras 2 names end in ``:0`` (``conv/kernel:0``); Keras 3 drops it and uses the variable *path*
(``conv/kernel``, ``seq/d1/kernel`` inside a Sequential, ``inner/inner_d/kernel`` for a nested one).
Keras 3 ``.weights.h5`` instead mirrors the object tree: ``layers/<snake_case class>/vars/<i>``
(nested models add ``layers/...`` again), ``optimizer/vars/<i>`` and the model's own ``vars``.
Tensor data is never read here: each ``Variable.loader`` reopens the file through ``h5safe``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

import h5py
import numpy as np

from ..dtypes import DType
from ..errors import FormatError, UnsupportedError
from ..spec import Format, GraphSpec, LayerSpec, ModelSpec, Role, Variable
from . import h5attrs, h5safe
from .h5load import (
    LoaderFactory,
    Opener,
    check_stamp,
    file_stamp,
    keras_major,
    keras_release,
    load_variable,
    variable,
)
from .jsonsafe import load_json
from .keras_config import parse_model_config, parse_model_json
from .keras_v3 import v3_vars_groups


def read_keras_h5(path: Path, config_json: str | None = None) -> ModelSpec:
    """Read a legacy Keras ``.h5`` (full model or weights only) or a Keras 3 ``.weights.h5`` file.

    Args:
        path: the HDF5 file.
        config_json: ``model.to_json()`` text giving the architecture of a weights-only file
            (it replaces a full model's own ``model_config``).

    Example:
        >>> spec = read_keras_h5(Path("model.h5"))  # doctest: +SKIP
        >>> spec["model_weights/conv/conv/kernel:0"].read().shape  # doctest: +SKIP
        (3, 3, 3, 8)
    """
    path = Path(path)
    label = str(path)
    stamp = file_stamp(path, label)
    opener: Opener = partial(h5safe.open_h5, path, label)
    factory: LoaderFactory = partial(_file_loader, path, stamp, label)
    with opener() as f:
        if h5safe.is_group(f, h5safe.GROUP_MODEL_WEIGHTS):
            return _legacy(f, path, label, factory, config_json, full_model=True)
        if h5attrs.read_attr_list(f, h5safe.ATTR_LAYER_NAMES, label):
            return _legacy(f, path, label, factory, config_json, full_model=False)
        if any(
            h5safe.is_group(f, g)
            for g in (h5safe.GROUP_LAYERS, h5safe.GROUP_VARS, h5safe.GROUP_LAYERS_KERAS_2_13)
        ):
            groups = v3_vars_groups(f, label, factory)
            variables = tuple(v for g in groups for v in g.variables)
            if config_json is None:
                notes = ["weights only: no architecture in the file"]
                return ModelSpec(path, Format.KERAS_WEIGHTS_H5, variables, notes=tuple(notes))
            from .keras_zip import (
                attach_v3_weights,
            )  # same tree as in a .keras; imported here to avoid a cycle

            graph, notes = attach_v3_weights(
                parse_model_json(config_json), load_json(config_json, label), groups, label
            )
            return ModelSpec(path, Format.KERAS_WEIGHTS_H5, variables, graph, notes=tuple(notes))
        found = ", ".join(h5safe.children(f, label)[:8]) or "nothing"
        raise FormatError(
            f"{label}: expected a Keras HDF5 file ('{h5safe.GROUP_MODEL_WEIGHTS}' group, '{h5safe.ATTR_LAYER_NAMES}' "
            f"attribute or '{h5safe.GROUP_LAYERS}'/'{h5safe.GROUP_VARS}' groups), found {found}; pass a file "
            "written by Keras model.save() or save_weights()"
        )


def _legacy(
    f: h5py.File, path: Path, label: str, factory: LoaderFactory, config_json: str | None, full_model: bool
) -> ModelSpec:
    root = h5safe.get_group(f, h5safe.GROUP_MODEL_WEIGHTS, label) if full_model else f
    prefix = f"{h5safe.GROUP_MODEL_WEIGHTS}/" if full_model else ""
    saved_by = (h5attrs.read_attr_text(root, h5safe.ATTR_KERAS_VERSION, label)
                or h5attrs.read_attr_text(f, h5safe.ATTR_KERAS_VERSION, label))
    version = keras_major(saved_by)
    per_layer: dict[str, tuple[Variable, ...]] = {}
    variables: list[Variable] = []
    for layer in h5attrs.read_attr_list(root, h5safe.ATTR_LAYER_NAMES, label):
        per_layer[layer] = _legacy_group(root, layer, prefix, label, factory, Role.WEIGHT)
        variables.extend(per_layer[layer])
    notes: list[str] = []
    unconverted = ""
    if h5safe.is_group(root, h5safe.GROUP_TOP_LEVEL_WEIGHTS):
        own = _legacy_group(root, h5safe.GROUP_TOP_LEVEL_WEIGHTS, prefix, label, factory, Role.WEIGHT)
        variables.extend(own)
        if own:
            notes.append(
                f"{len(own)} weight(s) belong to the model itself ({h5safe.GROUP_TOP_LEVEL_WEIGHTS})"
            )
    if full_model and h5safe.is_group(f, h5safe.GROUP_OPTIMIZER_WEIGHTS):
        variables.extend(_legacy_group(f, h5safe.GROUP_OPTIMIZER_WEIGHTS, "", label, factory, Role.OPTIMIZER))
    graph = None
    config_text = h5attrs.read_attr_text(f, h5safe.ATTR_MODEL_CONFIG, label) if full_model else None
    if config_json is not None:  # the caller's architecture; its dialect is read from the JSON itself
        config_text, version, label = config_json, None, f"{label} (with the given model JSON)"
    if config_text is not None:
        config = load_json(config_text, label, "the model config as JSON (the text of model.to_json())")
        try:
            graph = attach_legacy_weights(parse_model_config(config, version, where=label), per_layer, label)
            graph = replace(graph, keras_release=keras_release(saved_by))
        except UnsupportedError as exc:  # a subclassed model's config: keep the weights, say why
            notes.append(str(exc))
            unconverted = str(exc)
    elif full_model:
        notes.append(f"no '{h5safe.ATTR_MODEL_CONFIG}' attribute: weights only")
    return ModelSpec(path, Format.KERAS_H5, tuple(variables), graph, notes=tuple(notes), unconverted=unconverted)


def _legacy_group(
    parent: h5py.Group, name: str, prefix: str, label: str, factory: LoaderFactory, role: Role
) -> tuple[Variable, ...]:
    group = h5safe.get_group(parent, name, label)
    out = []
    # Order as saved: trainable weights, then non-trainable ones (``_legacy_weights`` in Keras),
    # e.g. BatchNormalization gamma, beta, moving_mean, moving_variance.
    for weight in h5attrs.read_attr_list(group, h5safe.ATTR_WEIGHT_NAMES, label):
        ds_path = f"{prefix}{name}/{weight}"
        ds = h5safe.get_dataset(group, weight, label)
        tf_name = weight[:-2] if weight.endswith(":0") else weight  # Keras 2 keeps TF's ":0" suffix
        note = "optimizer state (legacy h5)" if role is Role.OPTIMIZER else ""
        out.append(variable(ds, ds_path, label, factory, role, tf_name, note))
    return tuple(out)


def attach_legacy_weights(
    graph: GraphSpec, per_layer: dict[str, tuple[Variable, ...]], label: str
) -> GraphSpec:
    """Give each top-level layer its saved weights; nested models' inner layers get theirs by name."""
    known = {layer.name for layer in graph.layers}
    stray = [name for name, vs in per_layer.items() if vs and name not in known]
    if stray:
        raise FormatError(
            f"{label}: weights are saved for layer(s) {stray} that the model config does not have; the file is inconsistent"
        )
    layers = tuple(_with_weights(layer, per_layer.get(layer.name, ())) for layer in graph.layers)
    return replace(graph, layers=layers)


def _with_weights(layer: LayerSpec, weights: tuple[Variable, ...]) -> LayerSpec:
    if layer.graph is None or not weights:
        return replace(layer, weights=weights)
    # Legacy files store a nested model's weights as one list; its variable names carry the inner
    # layer's name ("inner_d/kernel:0", Keras 3: "inner/inner_d/kernel"), the deepest one wins.
    owners = {name: child.name for child in layer.graph.layers for name in _descendants(child)}
    split: dict[str, list[Variable]] = {}
    for var in weights:
        parts = (var.tf_name or var.name).split("/")[:-1]
        owner = next((owners[p] for p in reversed(parts) if p in owners), None)
        if owner is not None:
            split.setdefault(owner, []).append(var)
    inner = tuple(_with_weights(child, tuple(split.get(child.name, ()))) for child in layer.graph.layers)
    return replace(layer, weights=weights, graph=replace(layer.graph, layers=inner))


def _descendants(layer: LayerSpec) -> list[str]:
    inner = [n for child in layer.graph.layers for n in _descendants(child)] if layer.graph else []
    return [layer.name, *inner]


def _file_loader(
    path: Path, stamp: tuple[int, int], label: str, ds_path: str, dtype: DType, shape: tuple[int, ...]
) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        check_stamp(path, stamp, label)
        # scan=False: listing scanned these bytes already, and check_stamp says they did not change
        return load_variable(partial(h5safe.open_h5, path, label, scan=False), ds_path, dtype, shape, label,
                             mapped_from=path)

    return load


