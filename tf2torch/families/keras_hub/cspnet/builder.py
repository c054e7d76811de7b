"""keras-hub's CSPNetBackbone (CSPDarkNet, CSPResNet/ResNeXt, DarkNet): a stem, then stages of type
``csp`` (cross stage), ``cs3`` (cross stage, one transition conv) or ``dark``, each a downsampling conv
and residual blocks (``bottleneck_block``, ``dark_block``, ``edge_block``), channels-last.

Written from keras-hub 0.32's ``cspnet/cspnet_backbone.py``: its layer names (typos included), BatchNorm
epsilon 1e-5, ``LeakyReLU(0.01)`` for ``"leaky_relu"`` and an ``Activation`` layer for any other name.
The channel counts keras-hub reads from tensor shapes are tracked here, so arguments keras-hub's
constructor cannot build (a residual add of unequal widths, an odd split) are refused, not written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....errors import UnsupportedError
from ..common.args import Args, builds
from ..common.functional import FunctionalGraph, Ref
from ..common.keras_layers import (
    activation,
    batch_norm,
    channels_last_only,
    conv2d,
    image,
    pool2d,
    positive_ints,
    zero_pad2d,
)

EPSILON = 1e-5
STAGES, BLOCKS = ("csp", "cs3", "dark"), ("bottleneck_block", "dark_block", "edge_block")
_CANONICAL = {"swish": "silu", "hard_swish": "hard_silu"}  # the names Keras 3 saves these activations under


@dataclass
class _Net:
    args: Args
    g: FunctionalGraph
    act_name: str
    groups: int

    def conv(self, name: str, x: Ref, cin: int, filters: int, kernel: int, strides: int = 1,
             padding: str = "valid", groups: int = 1) -> Ref:
        if filters < 1:  # a width rounded down to nothing: Keras's Conv2D refuses it
            raise self.args.fail("stackwise_num_filters", f"widths and ratios giving conv {name!r} a channel")
        if cin % groups or filters % groups:  # so does Keras's Conv2D
            raise self.args.fail("groups", f"a divisor of conv {name!r}'s {cin} -> {filters} channels")
        return conv2d(self.g, name, x, filters, kernel, strides=strides, padding=padding, use_bias=False,
                      groups=groups)

    def bn(self, name: str, x: Ref) -> Ref:
        return batch_norm(self.g, name, x, EPSILON)

    def act(self, name: str, x: Ref) -> Ref:
        if self.act_name == "leaky_relu":  # keras-hub's own choice of slope, not Keras's default 0.2
            return self.g.layer("LeakyReLU", name, {"negative_slope": 0.01}, x)
        return activation(self.g, name, x, _CANONICAL.get(self.act_name, self.act_name))

    def add(self, name: str, x: Ref, shortcut: Ref) -> Ref:
        return self.g.layer("Add", name, {}, [x, shortcut])


def _ratios(args: Args, key: str, n: int) -> list[float]:
    """``_pad_arg``: one number, or a list cut or padded with its last value to one per stage."""
    value = args.raw(key, [1.0])
    values = value if isinstance(value, list) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0 for v in values):
        raise args.fail(key, "a positive number or a non-empty list of them")
    return (values + [values[-1]] * n)[:n]


def _block(n: _Net, kind: str, x: Ref, c: int, filters: int, bottle_ratio: float, name: str) -> Ref:
    """bottleneck_block / dark_block / edge_block: convs then a residual add (keras-hub adds x + shortcut)."""
    if c != filters:  # keras-hub's Add of unequal widths fails
        raise n.args.fail("block_ratio", f"a ratio giving {kind} {name!r} its input's {c} channels, not {filters}")
    hidden, p = int(round(filters * bottle_ratio)), f"{name}_{kind}"
    if kind == "edge_block":
        y = n.act(p + "_activation_1", n.bn(p + "_bn_1", n.conv(p + "_conv_1", x, c, hidden, 3, padding="same",
                                                                 groups=n.groups)))
        y = n.act(p + "_activation_2", n.bn(p + "_bn_2", n.conv(p + "_conv_2", y, hidden, filters, 1)))
        return n.add(p + "_add", y, x)
    y = n.act(p + "_activation_1", n.bn(p + "_bn_1", n.conv(p + "_conv_1", x, c, hidden, 1)))
    width = hidden if kind == "bottleneck_block" else filters
    y = n.act(p + "_activation_2", n.bn(p + "_bn_2", n.conv(p + "_conv_2", y, hidden, width, 3, padding="same",
                                                             groups=n.groups)))
    if kind == "dark_block":
        return n.add(p + "_add", y, x)
    y = n.bn(p + "_bn_3", n.conv(p + "_conv_3", y, hidden, filters, 1))
    return n.act(p + "_activation_4", n.add(p + "_add", y, x))


def _down(n: _Net, x: Ref, c: int, strides: int, avg_down: bool, avg_filters: int, conv_filters: int,
          names: tuple[str, str, str, str, str]) -> tuple[Ref, int]:
    """A stage's downsampling: average-pool (stride 2 only) and 1x1 conv, or pad (stride > 1) and 3x3 conv."""
    pool, pad, conv, bn, act = names
    if avg_down:
        if strides == 2:  # any other stride is dropped by keras-hub: the 1x1 conv keeps the size
            x = pool2d(n.g, "Average", pool, x, 2)
        x, c = n.conv(conv, x, c, avg_filters, 1, groups=n.groups), avg_filters
    else:
        if strides > 1:
            x = zero_pad2d(n.g, pad, x, 1)
        x, c = n.conv(conv, x, c, conv_filters, 3, strides=strides, groups=n.groups), conv_filters
    return n.act(act, n.bn(bn, x)), c


def _cross_stage(n: _Net, x: Ref, c: int, s: dict[str, Any], name: str) -> tuple[Ref, int]:
    """cross_stage (``csp``) and cross_stage3 (``cs3``): expand, split in halves, blocks on one half."""
    cs3, filters = s["type"] == "cs3", s["filters"]
    tag = "cs3" if cs3 else "csp"
    expand, block_filters = int(round(filters * s["expand_ratio"])), int(round(filters * s["block_ratio"]))
    if s["strides"] != 1:
        # cross_stage3 names its leaky_relu `_cs3__activation_1` (sic) but its other activations `_cs3_activation_1`
        act = f"{name}_cs3__activation_1" if cs3 and n.act_name == "leaky_relu" and not s["avg_down"] \
            else f"{name}_{tag}_activation_1"
        x, c = _down(n, x, c, s["strides"], s["avg_down"], filters, filters if s["down_growth"] else c,
                     (f"{name}_{'cross_stage3' if cs3 else 'csp'}_avg_pool", f"{name}_{tag}_conv_pad_1",
                      f"{name}_{tag}_conv_down_1", f"{name}_{tag}_bn_1", act))
    x = n.bn(f"{name}_{tag}_bn_2", n.conv(f"{name}_{tag}_conv_exp", x, c, expand, 1))
    if not s["cross_linear"]:
        x = n.act(f"{name}_{tag}_activation_2", x)
    if expand % 2:  # keras-hub splits into expand // (expand // 2) sections: two only when even
        raise n.args.fail("expand_ratio", f"a ratio giving stage {name!r} an even width, not {expand}")
    half = expand // 2
    split = n.g.op("Split", "keras.src.ops.numpy", n.g.auto_name("split"), {"indices_or_sections": 2, "axis": -1}, x)
    first, second = split, Ref(split.layer, split.node, 1)
    b = first if cs3 else second
    for i in range(s["depth"]):
        b = _block(n, s["block"], b, half if i == 0 else block_filters, block_filters, s["bottle_ratio"],
                   f"{name}_block_{i}")
    if cs3:
        out = n.g.layer("Concatenate", f"{name}_cs3_conv_transition_concat", {"axis": -1}, [b, second])
        out = n.bn(f"{name}_cs3_transition_bn", n.conv(f"{name}_cs3_conv_transition", out, expand, half, 1))
        return n.act(f"{name}_cs3_activation_3", out), half
    b = n.bn(f"{name}_csp_transition_b_bn", n.conv(f"{name}_csp_conv_transition_b", b, half, half, 1))
    b = n.act(f"{name}_csp_transition_b_activation", b)
    out = n.g.layer("Concatenate", f"{name}_csp_conv_concat", {"axis": -1}, [first, b])
    out = n.bn(f"{name}_csp_transition_bn", n.conv(f"{name}_csp_conv_transition", out, expand, filters, 1))
    return n.act(f"{name}_csp_transition_activation", out), filters


def _dark_stage(n: _Net, x: Ref, c: int, s: dict[str, Any], name: str) -> tuple[Ref, int]:
    """dark_stage: always a downsampling conv (3x3 valid even at stride 1), then the blocks."""
    filters = s["filters"]
    x, c = _down(n, x, c, s["strides"], s["avg_down"], filters, filters,
                 (f"{name}_dark_avg_pool", f"{name}_dark_conv_pad_1", f"{name}_dark_conv_down_1", f"{name}_dark_bn_1",
                  f"{name}_dark_activation_1"))
    block_filters = int(round(filters * s["block_ratio"]))
    for i in range(s["depth"]):
        x, c = _block(n, s["block"], x, c, block_filters, s["bottle_ratio"], f"{name}_block_{i}"), block_filters
    return x, c


def _stem(n: _Net, x: Ref, filters: list[int], kernel: int, strides: int, padding: str, pooling: str | None
          ) -> tuple[Ref, int, int]:
    """create_csp_stem: the output, its channels and its stride."""
    stride = 1
    for i, chs in enumerate(filters):
        conv_strides = 2 if (i == 0 and strides > 1) or (i == len(filters) - 1 and strides > 2 and not pooling) else 1
        if conv_strides > 1:
            x = zero_pad2d(n.g, f"csp_stem_pad_{i}", x, (kernel - 1) // 2)
        x = conv2d(n.g, f"csp_stem_conv_{i}", x, chs, kernel, strides=conv_strides,
                   padding=padding if i == 0 else "valid", use_bias=False)
        x = n.act(f"csp_stem_activation_{i}", n.bn(f"csp_stem_bn_{i}", x))
        stride *= conv_strides
    if pooling == "max":  # ops.pad with -inf: the max-pool's padding never wins over a negative activation
        x = n.g.op("Pad", "keras.src.ops.numpy", n.g.auto_name("pad"),
                   {"pad_width": [[0, 0], [1, 1], [1, 1], [0, 0]], "mode": "constant"}, x, constant_values=float("-inf"))
        x, stride = pool2d(n.g, "Max", "csp_stem_pool", x, 3, strides=2), stride * 2
    return x, filters[-1], stride


@builds("CSPNetBackbone")
def cspnet(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype, keyed_inputs=False)
    channels_last_only(args)
    x = image(args, g)
    stem = args.raw("stem_filters")
    stem_filters = positive_ints(args, "stem_filters") if isinstance(stem, list) else [args.int("stem_filters")]
    kernel, strides = args.int("stem_kernel_size"), args.int("stem_strides")
    if strides not in (1, 2, 4):  # keras-hub asserts this
        raise args.fail("stem_strides", "1, 2 or 4")
    pooling = args.raw("stem_pooling")
    if pooling is not None and pooling != "max":  # keras-hub pools only for "max"; others just drop a stride
        raise UnsupportedError(f"{args.where}: CSPNetBackbone stem_pooling={str(pooling)[:40]!r}; tf2torch converts "
                               "null or \"max\" only")
    if pooling == "max" and strides != 4:  # keras-hub asserts stride > 2
        raise args.fail("stem_pooling", "null unless stem_strides is 4")
    depths = positive_ints(args, "stackwise_depth")
    num = len(depths)
    filters = positive_ints(args, "stackwise_num_filters")
    raw_strides = args.raw("stackwise_strides")
    stage_strides = positive_ints(args, "stackwise_strides") if isinstance(raw_strides, list) \
        else [args.int("stackwise_strides")]
    if len(filters) < num:
        raise args.fail("stackwise_num_filters", f"at least {num} values, one per stage")
    stage_strides = (stage_strides + [stage_strides[-1]] * num)[:num]
    ratios = {k: _ratios(args, k, num) for k in ("bottle_ratio", "block_ratio", "expand_ratio")}
    stage_type = args.str("stage_type", choices=STAGES)  # keras-hub refuses its own default None
    block = args.str("block_type", choices=BLOCKS)
    flags = {k: args.bool(k, False) for k in ("avg_down", "down_growth", "cross_linear")}
    n = _Net(args, g, args.str("activation", "leaky_relu"), args.int("groups", 1))
    output_strides = args.int("output_strides", 32)
    x, c, net_stride = _stem(n, x, stem_filters, kernel, strides, args.str("stem_padding", "valid",
                                                                           choices=("valid", "same")), pooling)
    for i in range(num):
        if net_stride >= output_strides and stage_strides[i] > 1:
            # keras-hub 0.32 would dilate here, but overwrites its strides list with 1 and fails on it
            raise args.fail("output_strides", f"a stride the stages never reach (keras-hub cannot build stage {i})")
        net_stride *= stage_strides[i]
        s = {"type": stage_type, "block": block, "filters": filters[i], "depth": depths[i],
             "strides": stage_strides[i], **{k: v[i] for k, v in ratios.items()}, **flags}
        x, c = (_dark_stage if stage_type == "dark" else _cross_stage)(n, x, c, s, f"stage_{i}")
    return g.model(args.class_name, x)
