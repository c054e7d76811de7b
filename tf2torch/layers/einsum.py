"""EinsumDense (keras-hub's and MultiHeadAttention's projections) and Dot (batched dot products).

EinsumDense's kernel keeps its Keras shape, in a helper module that runs the layer's own equation
(torch.einsum takes Keras's subscripts, "..." included), so no layout is guessed; the bias is added in
the broadcast shape Keras stores it in.
"""

from __future__ import annotations

import re

from ..codegen import nodes as n
from ..map import layouts
from .base import Converted, Ctx, Module, Op, Param, TensorInfo
from .common import activation_ops, apply_module
from .registry import converter

_EQUATION = re.compile(r"^(\.\.\.)?([a-z]+),([a-z]+)->(\.\.\.)?([a-z]+)$")


@converter("EinsumDense", wants="keras", weights=("kernel", "bias"))
def einsum_dense(ctx: Ctx) -> Converted:
    equation = ctx.config.get("equation")
    m = _EQUATION.match(equation) if isinstance(equation, str) else None
    if m is None or bool(m.group(1)) != bool(m.group(4)):
        raise ctx.unsupported(f"equation {equation!r}: expected 'ab,bc->ac' or '...b,bc->...c'")
    elided, x_spec, w_spec, out_spec = bool(m.group(1)), m.group(2), m.group(3), m.group(5)
    weights = list(ctx.layer.weights)
    if len(weights) not in (1, 2):
        raise ctx.unsupported(f"expected a kernel and an optional bias, found {len(weights)} weights")
    kernel, bias = weights[0], (weights[1] if len(weights) == 2 else None)
    if bias is not None and ctx.config.get("bias_axes") in (None, ""):
        raise ctx.unsupported("a bias without bias_axes in the config")
    shape = (None, *ctx.x.shape)  # with the batch axis, as the equation counts it
    if len(kernel.shape) != len(w_spec) or (not elided and len(shape) != len(x_spec)) or len(shape) < len(x_spec):
        raise ctx.unsupported(f"equation {equation!r} for an input of rank {len(shape)} and a kernel of rank "
                              f"{len(kernel.shape)}")
    sizes = dict(zip(w_spec, kernel.shape))
    sizes.update(zip(x_spec, shape[len(shape) - len(x_spec):]))
    lead = shape[:len(shape) - len(x_spec)] if elided else ()
    out = (*lead, *(sizes.get(c) for c in out_spec))
    info = TensorInfo(tuple(out[1:]), "keras")
    module = Module("KerasEinsumDense", (equation, tuple(kernel.shape), tuple(bias.shape) if bias else None))
    params = [Param("", "kernel", layouts.IDENTITY, var=kernel)]  # the kernel as Keras holds it
    if bias is not None:
        params.append(Param("", "bias", layouts.IDENTITY, var=bias))
    ops = (apply_module(module), *activation_ops(ctx, ctx.config.get("activation"), info))
    return Converted(ops, (info,), tuple(params), helpers=("KerasEinsumDense",))


@converter("Dot", wants="keras")
def dot(ctx: Ctx) -> Converted:
    """keras.layers.Dot: a batched dot product over ``axes`` (one per input), optionally of
    L2-normalised inputs (x * rsqrt(max(sum(x ** 2), 1e-12)), as Keras normalises)."""
    if len(ctx.inputs) != 2:
        raise ctx.unsupported(f"Dot takes 2 inputs, found {len(ctx.inputs)}")
    a, b = ctx.inputs
    axes = ctx.config.get("axes")
    pair = axes if isinstance(axes, list) else [axes, axes]
    if len(pair) != 2 or any(isinstance(x, bool) or not isinstance(x, int) for x in pair):
        raise ctx.unsupported(f"config 'axes' should be an int or two ints, found {axes!r}")
    ax, bx = (p % info.rank for p, info in zip(pair, (a, b)))
    if 0 in (ax, bx) or a.shape[ax - 1] != b.shape[bx - 1]:
        raise ctx.unsupported(f"axes {pair} of shapes {list(a.shape)} and {list(b.shape)}")
    x, y = n.arg(0), n.arg(1)
    if ctx.config.get("normalize"):
        x, y = _l2_normalized(x, ax), _l2_normalized(y, bx)
    letters = "bcdefghijklmnopq"
    sa = ["a", *letters[:a.rank - 1]]
    sb = ["a", *letters[a.rank - 1:a.rank - 1 + b.rank - 1]]
    sb[bx] = sa[ax]  # the contracted axis
    rest = [c for i, c in enumerate(sa) if i not in (0, ax)] + [c for i, c in enumerate(sb) if i not in (0, bx)]
    equation = f"{''.join(sa)},{''.join(sb)}->a{''.join(rest)}"
    shape = tuple(s for i, s in enumerate(a.shape) if i != ax - 1) + tuple(s for i, s in enumerate(b.shape) if i != bx - 1)
    expr = n.call("torch.einsum", equation, x, y)
    if not shape:  # two vectors: Keras keeps a (batch, 1) result
        return Converted((Op(expr.m("unsqueeze", 1)),), (TensorInfo((1,), "keras"),))
    return Converted((Op(expr),), (TensorInfo(shape, "keras"),))


def _l2_normalized(x: n.Expr, dim: int) -> n.Expr:
    """``x * rsqrt(max(sum(x ** 2), 1e-12))`` over ``dim``, as Keras's Dot(normalize=True) computes it."""
    return x * n.call("torch.rsqrt", n.call("torch.clamp", (x ** 2).m("sum", dim=dim, keepdim=True), min=1e-12))

