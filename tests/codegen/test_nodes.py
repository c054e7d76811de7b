"""The node builders converters write ops with render the Python a converter means (codegen/nodes.py),
and an op takes nodes only: no text is parsed back into nodes."""

from __future__ import annotations

import pytest

from tf2torch.codegen import nodes as n
from tf2torch.codegen.ir import Op
from tf2torch.codegen.render import render

X, M = n.X, n.M

CASES = {
    "call-literals": (n.call("torch.split", X, [2, 3], dim=1), "torch.split({x}, [2, 3], dim=1)"),
    "module-call": (n.call(M, X.m("long")), "{m}({x}.long())"),
    "method-chain": (X.m("flatten", 1).m("unflatten", 1, (4,)), "{x}.flatten(1).unflatten(1, (4,))"),
    "precedence": (n.arg(0) + n.arg(1) * 0.5, "{0} + {1} * 0.5"),
    "parenthesised": ((n.arg(0) + n.arg(1)) / 2, "({0} + {1}) / 2"),
    "number-on-the-left": (0.2 * X + 0.5, "0.2 * {x} + 0.5"),
    "negative-operand": (X * -1.5, "{x} * -1.5"),
    "negative-base": (n.lit(-2) ** X, "(-2) ** {x}"),
    "power-of-difference": ((n.arg(0) - n.arg(1)) ** 2, "({0} - {1}) ** 2"),
    "unary-minus": (-X, "-{x}"),
    "compare": (n.compare(X, "!=", 0.0).m("any", dim=-1), "({x} != 0.0).any(dim=-1)"),
    "compare-in-call": (n.call("torch.where", n.compare(X, ">=", 1.0), X, 0.0), "torch.where({x} >= 1.0, {x}, 0.0)"),
    "slices": (X[:, :, 1:-2, 3:], "{x}[:, :, 1:-2, 3:]"),
    "open-start": (X[:, 1:], "{x}[:, 1:]"),
    "ellipsis-step": (X[..., ::2], "{x}[..., ::2]"),
    "new-axes": (n.arg(1)[:, None, None], "{1}[:, None, None]"),
    "index-list": (X[:, :, [0, 2]], "{x}[:, :, [0, 2]]"),
    "infinite": (n.call("F.pad", X, [1, 1], value=float("-inf")), "F.pad({x}, [1, 1], value=float('-inf'))"),
    "attribute": (X.m("to", n.Attr(X, "dtype")), "{x}.to({x}.dtype)"),
    "starred-tuple": (n.Tuple((n.Starred(X), n.call(M, X[-1][0]))), "(*{x}, {m}({x}[-1][0]))"),
    "one-tuple": (n.Tuple((n.call(M, X),)), "({m}({x}),)"),
}


@pytest.mark.parametrize("node,text", CASES.values(), ids=CASES.keys())
def test_builders_render_what_they_mean(node: n.Expr, text: str) -> None:
    assert render(node) == text


def test_literals_are_leaves_a_block_kind_can_vary() -> None:
    # a negative number is one constant (blocks/template.py makes differing numbers constructor arguments)
    assert n.lit(-1) == n.Const(-1)
    assert X.m("movedim", -1, 1) == n.Call(n.Attr(X, "movedim"), (n.Const(-1), n.Const(1)))


def test_an_op_takes_nodes_not_text() -> None:
    assert Op(n.call(M, X)).expr == n.Call(M, (X,))
    with pytest.raises(TypeError, match="nodes"):
        Op("torch.flatten({x}, 1)")  # type: ignore[arg-type]
