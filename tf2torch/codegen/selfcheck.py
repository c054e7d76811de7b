"""Each weight checked against the module that will hold it, as the model is generated: the shape the
torch module's constructor gives that parameter (read from the constructor's literal arguments, the
way torch computes it) must be the shape the weight is written in.

A converter that gives a module a weight of another shape (a (1, C) gamma for a (C,) LayerNorm) would
otherwise write a model.py whose ``load_model()`` fails after ``convert`` said success. Static: no
torch, nothing executed; modules outside the table (tf2torch's helper classes hold their weights under
the converters' own shapes) are not checked.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from .ir import Module

Shape = tuple[int, ...]


def _kw(module: Module) -> dict[str, Any]:
    return dict(module.kwargs)


def _ints(value: Any, n: int) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (int(value),) * n


def _conv(module: Module, n: int, transpose: bool) -> dict[str, Shape]:
    cin, cout, kernel = module.args[:3]
    kw = _kw(module)
    groups = int(kw.get("groups", 1))
    shape = (cin, cout // groups) if transpose else (cout, cin // groups)
    out = {"weight": (*shape, *_ints(kernel, n))}
    if kw.get("bias", True):
        out["bias"] = (cout,)
    return out


def expected_shapes(module: Module) -> dict[str, Shape] | None:
    """Parameter / buffer name -> shape for the torch module ``module`` builds; None when not known."""
    cls, args, kw = module.cls, module.args, _kw(module)
    for n in (1, 2, 3):
        if cls == f"nn.Conv{n}d":
            return _conv(module, n, transpose=False)
        if cls == f"nn.ConvTranspose{n}d":
            return _conv(module, n, transpose=True)
        if cls == f"nn.BatchNorm{n}d":
            c = (int(args[0]),)
            return {"weight": c, "bias": c, "running_mean": c, "running_var": c, "num_batches_tracked": ()}
    if cls == "nn.Linear":
        return {"weight": (args[1], args[0]), **({"bias": (args[1],)} if kw.get("bias", True) else {})}
    if cls == "nn.LayerNorm":
        shape = _ints(args[0], 1)
        affine = kw.get("elementwise_affine", True)
        return {"weight": shape, **({"bias": shape} if kw.get("bias", True) else {})} if affine else {}
    if cls == "nn.Embedding":
        return {"weight": (args[0], args[1])}
    if cls == "TFConstant":
        return {"value": tuple(args[0])}
    return None


def check_param(module: Module | None, name: str, shape: Shape, key: str) -> None:
    """Raise when ``module`` would hold ``name`` in another shape than ``shape`` (or not at all)."""
    expected = expected_shapes(module) if module is not None else None
    if expected is None:
        return
    if name not in expected:
        raise UnsupportedError(f"{key}: tf2torch writes a weight {module.cls} has no parameter {name!r} for; "  # type: ignore[union-attr]
                               "this is a tf2torch bug: please report it with the file")
    if tuple(expected[name]) != tuple(shape):
        raise UnsupportedError(f"{key}: {module.cls} holds it as {list(expected[name])}, the weight is "  # type: ignore[union-attr]
                               f"{list(shape)}; this is a tf2torch bug: please report it with the file")
