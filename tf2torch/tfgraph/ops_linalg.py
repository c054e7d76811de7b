"""Products: MatMul / BatchMatMul onto a weight (a Dense over the last axis, whatever the rank), of two
run-time tensors, and Einsum of tensors (attention scores).

``tf.tensordot`` (Keras 3's Dense on a rank-3 input, exported) flattens (N, T, C) to (N*T, C), multiplies,
and reshapes back: the flattening is tracked (``Tensor.merged``), so the Dense applies to the (N, T, C)
tensor itself and both reshapes vanish.
"""

from __future__ import annotations

import re

from .base import Const, NodeCtx, Tensor, TFShape, Value, tf_op

TF = "tf2torch>"
_TERM = re.compile(r"^[A-Za-z]*$")


def _dense(ctx: NodeCtx, x: Tensor, kernel: Const) -> Tensor:
    if len(kernel.shape) != 2 or (x.shape[-1] is not None and x.shape[-1] != kernel.shape[0]):
        raise ctx.unsupported(f"operands of shapes {list(x.shape)} and {list(kernel.shape)}")
    config = {"units": kernel.shape[1], "use_bias": False, "activation": "linear"}
    if x.merged is not None:  # the Dense acts on the last axis: apply it to the unflattened tensor
        real = Tensor(x.ref, x.merged, x.node)
        out = ctx.layer("Dense", config, [real], (*x.merged[:-1], kernel.shape[1]), weights=[("kernel", kernel)])
        return Tensor(out.ref, (None, kernel.shape[1]), out.node, merged=out.shape)
    return ctx.layer("Dense", config, [x], (*x.shape[:-1], kernel.shape[1]), weights=[("kernel", kernel)])


def _broadcast_batch(a: TFShape, b: TFShape) -> TFShape:
    lead_a, lead_b = a[:-2], b[:-2]
    n = max(len(lead_a), len(lead_b))
    lead_a, lead_b = (None,) * (n - len(lead_a)) + lead_a, (None,) * (n - len(lead_b)) + lead_b
    return tuple(x if x not in (None, 1) else y for x, y in zip(lead_a, lead_b))


def _tensors(ctx: NodeCtx, a: Tensor, b: Tensor, adj_x: bool, adj_y: bool) -> Tensor:
    if len(a.shape) != len(b.shape):
        raise ctx.unsupported(f"a product of tensors of ranks {len(a.shape)} and {len(b.shape)}")
    rows = a.shape[-1] if adj_x else a.shape[-2]
    cols = b.shape[-2] if adj_y else b.shape[-1]
    shape = (*_broadcast_batch(a.shape, b.shape), rows, cols)
    return ctx.layer(TF + "MatMul", {"adj_x": adj_x, "adj_y": adj_y, "shape": list(shape[1:])}, [a, b], shape)


@tf_op("MatMul", arity=2)
def matmul(ctx: NodeCtx) -> tuple[Value, ...]:
    b = ctx.inputs[1]
    adj_x, adj_y = bool(ctx.attr("transpose_a", False)), bool(ctx.attr("transpose_b", False))
    if isinstance(b, Const):
        if adj_x or adj_y:
            raise ctx.unsupported("a transposed operand (transpose_a / transpose_b) with a weight",
                                  "store the weight as (in, out), as tf.layers.dense does")
        x = ctx.tensor(0)
        if len(x.shape) != 2:
            raise ctx.unsupported(f"a MatMul of a rank-{len(x.shape)} tensor")
        return (_dense(ctx, x, b),)
    return (_tensors(ctx, ctx.tensor(0), ctx.tensor(1), adj_x, adj_y),)


@tf_op("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", arity=2)
def batch_matmul(ctx: NodeCtx) -> tuple[Value, ...]:
    adj_x, adj_y = bool(ctx.attr("adj_x", False)), bool(ctx.attr("adj_y", False))
    if isinstance(ctx.inputs[1], Const):
        if adj_x or adj_y:
            raise ctx.unsupported("an adjoint operand with a weight")
        return (_dense(ctx, ctx.tensor(0), ctx.inputs[1]),)  # (N, ..., C) @ (C, U): a Dense
    return (_tensors(ctx, ctx.tensor(0), ctx.tensor(1), adj_x, adj_y),)


@tf_op("Einsum", arity=1)
def einsum(ctx: NodeCtx) -> tuple[Value, ...]:
    equation = str(ctx.attr("equation", ""))
    lhs, _, out = equation.partition("->")
    terms = lhs.split(",")
    if not _ or len(terms) != len(ctx.inputs) or not all(_TERM.match(t) for t in [*terms, out]):
        raise ctx.unsupported(f"einsum equation {equation!r} (only explicit subscripts, no ellipsis)")
    tensors = [ctx.tensor(i) for i in range(len(ctx.inputs))]
    sizes: dict[str, int | None] = {}
    for term, t in zip(terms, tensors):
        if len(term) != len(t.shape):
            raise ctx.unsupported(f"subscripts {term!r} for a rank-{len(t.shape)} operand")
        for letter, size in zip(term, t.shape):
            sizes[letter] = sizes.get(letter) if size is None else size
    batch = {term[0] for term in terms}
    if len(batch) != 1 or not out or out[0] not in batch:
        raise ctx.unsupported(f"einsum {equation!r}: every operand and the result must keep the batch axis first")
    shape = tuple(None if i == 0 else sizes.get(letter) for i, letter in enumerate(out))
    return (ctx.layer(TF + "Einsum", {"equation": equation, "shape": list(shape[1:])}, tensors, shape),)
