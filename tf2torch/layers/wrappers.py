"""Wrappers. TimeDistributed: the wrapped layer on every step of axis 1, by folding the steps into the batch
(``(N, T, ...) -> (N*T, ...)``), running the wrapped layer's own converter there, and unfolding; the
wrapped layer's weights are the wrapper's, in the same order. SpectralNormalization: the wrapped layer."""

from __future__ import annotations

from collections.abc import Callable

from ..codegen import nodes as n
from ..codegen import visit
from ..spec import LayerSpec, Variable
from . import layouts_rt
from .base import Converted, Ctx, Op, Registration, TensorInfo
from .common import weight_path
from .registry import converter, lookup


def _wrapped(ctx: Ctx, weights: Callable[[str | None], tuple[Variable, ...]]) -> tuple[LayerSpec, Registration]:
    """The wrapped layer (config ``layer``) as a layer of its own, with ``weights(its name)``, and its converter."""
    inner_cfg = ctx.config.get("layer")
    if not isinstance(inner_cfg, dict) or not isinstance(inner_cfg.get("class_name"), str):
        raise ctx.unsupported("config 'layer' should describe the wrapped layer")
    config = inner_cfg.get("config") if isinstance(inner_cfg.get("config"), dict) else {}
    name = config.get("name")
    inner = LayerSpec(name=f"{ctx.layer.name}/{name or 'layer'}", class_name=inner_cfg["class_name"],
                      config=config, calls=ctx.layer.calls, weights=weights(name if isinstance(name, str) else None))
    reg = lookup(inner)
    if inner.graph is not None or reg.wants == "same" or len(ctx.inputs) != 1:
        raise ctx.unsupported(f"wrapping a {inner.class_name}")
    return inner, reg


@converter("TimeDistributed", wants="keras")
def time_distributed(ctx: Ctx) -> Converted:
    steps = ctx.x.shape[0] if ctx.x.shape else None
    if steps is None or ctx.x.rank < 3:
        raise ctx.unsupported("a TimeDistributed input needs a known number of steps (axis 1)")
    inner, reg = _wrapped(ctx, lambda _: ctx.layer.weights)
    folded = TensorInfo(ctx.x.shape[1:], "keras")  # one step: the batch axis now counts the steps too
    x = n.Hole("x")
    expr, info = (x, folded) if reg.wants in ("keras", "any") else layouts_rt.convert(x, folded, reg.wants)
    conv = reg.fn(Ctx(inner, ctx.call, (layouts_rt.normalise(info),), ctx.keras_version))
    if len(conv.outputs) != 1:
        raise ctx.unsupported(f"wrapping a {inner.class_name} with {len(conv.outputs)} outputs")
    out = layouts_rt.normalise(conv.outputs[0])
    back, out_keras = layouts_rt.convert(x, out, "keras")
    fold = Op(visit.fill(expr, {"x": n.method(x, "flatten", 0, 1)}))
    unfold = Op(n.method(back, "unflatten", 0, (-1, steps)))
    return Converted((fold, *conv.ops, unfold), (TensorInfo((steps, *out_keras.shape), "keras"),), conv.params,
                     notes=conv.notes, helpers=conv.helpers, sized=conv.sized)


@converter("SpectralNormalization", wants="any", accepts_flat=True)
def spectral_normalization(ctx: Ctx) -> Converted:
    """The wrapped layer itself: Keras (3 and tf_keras) normalises the kernel by power iteration only when
    called with training=True, writing the result into the kernel; inference reads the kernel as saved.
    ``vector_u`` (the iteration's state) and the wrapper's second reference to the kernel go unused."""
    inner, reg = _wrapped(ctx, lambda name: tuple(var for var in ctx.layer.weights if _of_wrapped(var, name)))
    if inner.config.get("mask_zero") is True:  # whether Keras hands this mask on is not checked: refused
        raise ctx.unsupported("it wraps an Embedding with mask_zero=True", "save the Embedding unwrapped")
    info, ops = ctx.x, ()
    if reg.wants != "any" and not (reg.accepts_flat and info.layout == "cf_flat"):
        expr, info = layouts_rt.convert(n.Hole("x"), info, reg.wants)
        ops = (Op(expr),) if expr != n.Hole("x") else ()
    conv = reg.fn(Ctx(inner, ctx.call, (layouts_rt.normalise(info),), ctx.keras_version, ctx.keras_release))
    # the wrapped layer's first op reads the moved input, not the layer's own input 0
    first = (Op(visit.fill(conv.ops[0].expr, {"0": n.Hole("x")}), conv.ops[0].module, conv.ops[0].suffix),) if ops else ()
    return Converted((*ops, *first, *conv.ops[len(first):]), conv.outputs, conv.params, notes=conv.notes,
                     helpers=conv.helpers, sized=conv.sized)


def _of_wrapped(var: Variable, name: str | None) -> bool:
    """A weight of the wrapped layer: ``.keras`` files save it under ``…/layer/vars/N`` (the wrapper's own
    ``…/vars/N`` are vector_u and the kernel again), ``.h5`` files under the wrapped layer's name."""
    segments = weight_path(var)
    return segments[-1] != "vector_u" and ("layer" in segments[:-1] or (name is not None and name in segments[:-1]))
