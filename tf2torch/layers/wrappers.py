"""TimeDistributed: the wrapped layer on every step of axis 1, by folding the steps into the batch
(``(N, T, ...) -> (N*T, ...)``), running the wrapped layer's own converter there, and unfolding.
The wrapped layer's weights are the wrapper's, in the same order."""

from __future__ import annotations

from ..spec import LayerSpec
from . import layouts_rt
from .base import Converted, Ctx, Op, TensorInfo
from .registry import converter, lookup


@converter("TimeDistributed", wants="keras")
def time_distributed(ctx: Ctx) -> Converted:
    inner_cfg = ctx.config.get("layer")
    if not isinstance(inner_cfg, dict) or not isinstance(inner_cfg.get("class_name"), str):
        raise ctx.unsupported("config 'layer' should describe the wrapped layer")
    steps = ctx.x.shape[0] if ctx.x.shape else None
    if steps is None or ctx.x.rank < 3:
        raise ctx.unsupported("a TimeDistributed input needs a known number of steps (axis 1)")
    config = inner_cfg.get("config") if isinstance(inner_cfg.get("config"), dict) else {}
    inner = LayerSpec(name=f"{ctx.layer.name}/{config.get('name', 'layer')}", class_name=inner_cfg["class_name"],
                      config=config, calls=ctx.layer.calls, weights=ctx.layer.weights)
    reg = lookup(inner)
    if inner.graph is not None or reg.wants == "same":
        raise ctx.unsupported(f"wrapping a {inner.class_name}")
    folded = TensorInfo(ctx.x.shape[1:], "keras")  # one step: the batch axis now counts the steps too
    expr, info = ("{x}", folded) if reg.wants in ("keras", "any") else layouts_rt.convert("{x}", folded, reg.wants)
    conv = reg.fn(Ctx(inner, ctx.call, (layouts_rt.normalise(info),), ctx.keras_version))
    if len(conv.outputs) != 1:
        raise ctx.unsupported(f"wrapping a {inner.class_name} with {len(conv.outputs)} outputs")
    out = layouts_rt.normalise(conv.outputs[0])
    back, out_keras = layouts_rt.convert("{x}", out, "keras")
    fold = Op(expr.replace("{x}", "{x}.flatten(0, 1)"))
    unfold = Op(back.replace("{x}", "{x}") + f".unflatten(0, (-1, {steps}))")
    return Converted((fold, *conv.ops, unfold), (TensorInfo((steps, *out_keras.shape), "keras"),), conv.params,
                     notes=conv.notes, helpers=conv.helpers)
