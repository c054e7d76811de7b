"""Sharded TF weights (``tf_model-00001-of-0000N.h5`` + ``tf_model.h5.index.json``) as one ModelSpec.

transformers 4.x's TF ``save_pretrained(max_shard_size=...)`` does not write Keras' layout: each shard is a
flat HDF5 file whose root attribute ``layer_names`` lists *dataset paths* (not layer groups with
``weight_names``), each the variable's name without its first scope, e.g. ``bert/embeddings/LayerNorm/gamma:0``
for ``tf_bert_for_sequence_classification/bert/embeddings/LayerNorm/gamma:0``. The index maps the full
names to shard files. The Keras reader cannot read that layout, so it is read here, with the same hardened
HDF5 access (``readers.h5safe``) and lazy, stamp-checked loaders.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from ..dtypes import DType
from ..errors import FormatError
from ..readers import h5attrs, h5safe
from ..readers.h5load import check_stamp, file_stamp, load_variable, variable
from ..readers.jsonsafe import load_json
from ..spec import Format, ModelSpec, Role, Variable


def read_shards(index: Path, shards: tuple[Path, ...]) -> ModelSpec:
    """Every weight of every shard, in shard order; the index and the shards must agree on the names."""
    variables: list[Variable] = []
    for shard in shards:
        variables.extend(_read_shard(shard))
    listed = _short_names(index)
    found = {v.name for v in variables}
    absent = sorted(listed - found)
    if absent:
        raise FormatError(f"{index}: names {len(absent)} weight(s) no shard holds, e.g. {absent[0]!r}; the shards "
                          "and the index come from different saves: download the repository again")
    return ModelSpec(index, Format.KERAS_H5, tuple(variables),
                     notes=(f"{len(shards)} TF shard(s) listed by {index.name}",))


def _read_shard(path: Path) -> list[Variable]:
    label = str(path)
    stamp = file_stamp(path, label)
    out = []
    with h5safe.open_h5(path, label) as f:
        names = h5attrs.read_attr_list(f, h5safe.ATTR_LAYER_NAMES, label)
        if not names:
            raise FormatError(f"{label}: expected a transformers TF shard (a 'layer_names' attribute listing its "
                              "datasets), found none; download the shard again")
        for ds_path in names:
            ds = h5safe.get_dataset(f, ds_path, label)
            tf_name = ds_path[:-2] if ds_path.endswith(":0") else ds_path  # TF names end in ":0"
            out.append(variable(ds, ds_path, label, partial(_loader, path, stamp, label), Role.WEIGHT, tf_name, ""))
    return out


def _short_names(index: Path) -> set[str]:
    """The index's weight names as the shards store them: without the model's own first scope (except
    names that had only one part, or that contain "model.", which transformers kept whole)."""
    data = load_json(index.read_bytes(), str(index), "a shard index")
    names = set()
    for name in data["weight_map"]:
        keep = "model." in name or len(name.split("/")) == 1  # the same rule as transformers' writer
        names.add(name if keep else "/".join(name.split("/")[1:]))
    return names


def _loader(path: Path, stamp: tuple[int, int], label: str, ds_path: str, dtype: DType,
            shape: tuple[int, ...]) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        check_stamp(path, stamp, label)  # the shard must be the one that was listed
        return load_variable(partial(h5safe.open_h5, path, label, scan=False), ds_path, dtype, shape, label,
                             mapped_from=path)

    return load
