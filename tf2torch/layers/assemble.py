"""The pieces of a Keras model's conversion: its generated classes (repeated blocks as one class per kind),
the write plan of each parameter, and the names that say what each weight is (for ``--model`` matching).

The orchestration (plans, report, model.py) is ``tf2torch.pipelines.keras``.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..dtypes import DType
from ..errors import UnsupportedError
from ..map.plan import plan_tensor
from ..plan import TensorPlan
from ..spec import GraphSpec, ModelSpec
from .base import Param
from .graph import Generated, GraphConverter, Options


def _const_plan(key: str, value: np.ndarray) -> TensorPlan:
    value = np.array(value, order="C")  # not ascontiguousarray: that makes a 0-d array (1,)
    dtype = dtypes.from_numpy(value.dtype, key)
    return TensorPlan(key=key, dtype=dtype, shape=tuple(value.shape), produce=lambda: value, source="")


def generate(graph: GraphSpec, options: Options) -> Generated:
    """The generated classes of ``graph``, each kind of repeated block as one class (codegen/blocks/).

    A block whose generated code matches no other block's is converted flat on a second pass: a class
    used once reads worse than its layers inline."""
    from ..codegen.blocks import find, stages, template

    if not options.blocks or options.scoped:  # a TF graph's modules already nest by its scopes
        return GraphConverter(options).convert(graph)
    exclude: frozenset[str] = frozenset()
    try:
        while True:
            converter = GraphConverter(options)
            gen = converter.convert(find.nest_all(graph, exclude), original=graph)
            gen.classes, lonely = template.merge(gen.classes, set(gen.helpers))
            if not lonely or exclude.issuperset(lonely):
                stages.sequential(gen, {c.name for c in gen.classes if c.block})
                return gen
            exclude |= frozenset(lonely)
    except UnsupportedError as exc:  # a block the walker cannot take: the same numbers, one module per layer
        gen = GraphConverter(options).convert(graph)  # (when this fails too, its error is the one to report)
        gen.notes.append(f"repeated blocks left flat: {exc}")
        return gen


def match_names(spec: ModelSpec) -> dict[str, str]:
    """Source name -> a name that says what the weight is (``layers/conv2d/vars/0`` -> ``conv1/weight``).

    For matching a Keras file onto a user's own PyTorch model: the converters know which Keras weight is
    which; their generated keys (layer name + torch parameter) are what the name matcher understands.
    Empty when the architecture cannot be converted (then the file's own names are all there is).
    """
    if spec.graph is None:
        return {}
    try:  # flat: block stages renumber layers (conv2_block2 -> conv2_blocks.0), which would mislead a matcher
        gen = GraphConverter(Options(keras_version=spec.graph.keras_version, blocks=False)).convert(spec.graph)
    except UnsupportedError:
        return {}
    return {p.var.name: key.replace(".", "/") for key, p in gen.params if p.var is not None}


def param_plan(key: str, p: Param, dtype: DType | None) -> TensorPlan:
    """The plan of one generated parameter: its variable through its layout, or the converter's constant."""
    if p.var is not None:
        return plan_tensor(key, p.var, p.layout, dtype)
    if p.const is None:
        raise ValueError(f"{key}: a Param needs a var or a const")
    const = p.const
    if dtype is not None and const.dtype.kind == "f":
        const = dtypes.cast(const.astype(np.float32), dtypes.by_name("float32"), dtype)
    return _const_plan(key, const)
