"""Full-integer int8 REDUCE_PROD: a ``tf2torch>LiteIntProd`` layer (``layers/lite_int_prod.py``) running LiteRT's
``QuantizedReduceProd`` (``runtime/lite_int_prod.py``) with the scaling its ``PrepareProd`` computes.
"""

from __future__ import annotations

import numpy as np

from ..tfgraph.base import Value
from .base import LiteCtx, int_op
from .ops_int import INT, io_params
from .quant_math import quantize_multiplier


def prod_scaling(s_in: float, s_out: float, count: int) -> tuple[int, int]:
    """``GetQuantProdScaling``: each of the product's steps is rescaled by input scale / output scale ** (1 /
    count) (double arithmetic on the float32 scales), so that after the last of count rescalings the product
    is on the output's scale; (multiplier, shift) of that factor."""
    return quantize_multiplier(float(s_in) / float(s_out) ** (1.0 / count))


@int_op("REDUCE_PROD")
def reduce_prod(ctx: LiteCtx) -> tuple[Value, ...]:
    x, axes = ctx.tensor(0), ctx.const(1, "axes")
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    rank = len(x.shape)
    dims = sorted({int(a) % rank for a in np.asarray(axes.array()).reshape(-1)})
    if not dims or 0 in dims or any(x.shape[d] is None for d in dims):
        raise ctx.unsupported(f"an int8 product over axes {dims} of shape {list(x.shape)}")
    count = int(np.prod([x.shape[d] for d in dims]))  # PrepareProd's input size / output size
    keep = bool(ctx.option("keep_dims", False))
    shape = tuple(1 if i in dims else s for i, s in enumerate(x.shape) if keep or i not in dims)
    multiplier, shift = prod_scaling(s_in, s_out, count)
    config = {"axes": dims, "keepdims": keep, "input_zero_point": z_in, "output_zero_point": z_out,
              "multiplier": multiplier, "shift": shift}
    return (ctx.layer(INT + "Prod", config, [x], shape, name=ctx.name),)
