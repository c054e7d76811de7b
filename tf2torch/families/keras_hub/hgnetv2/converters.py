"""keras-hub's HGNetV2 layers: HGNetV2Embeddings and HGNetV2Encoder as ``KerasHubHGNetV2Embeddings`` /
``KerasHubHGNetV2Encoder`` (``families/keras_hub/hgnetv2/runtime.py``). Each is a tree of HGNetV2ConvLayer
units (zero pad, bias-free conv, BatchNorm, activation, optional learnable affine block) whose weights sit
under the unit's sublayer path; both walk that tree once, as keras-hub builds it, to name each unit's
weights and check their shapes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ....layers.base import Converted, Ctx, Module, Param, TensorInfo
from ....layers.common import apply_module, cfg_bool, cfg_int, cfg_str, channels_last, param
from ....layers.registry import converter
from ....spec import Variable
from ..common.converters import HUB, conv_bn_params, sublayer_weights

ACTIVATIONS = ("relu", "gelu", "tanh")  # HGNetV2ConvLayer's (or None: identity)
# Keras 3 names a list's layers after their class, numbered per class (saving_lib._get_unique_name)
STAGE, BASIC, UNIT, LIGHT = "hg_net_v2_stage", "hg_net_v2_basic_layer", "hg_net_v2_conv_layer", "hg_net_v2_conv_layer_light"


@dataclass(frozen=True)
class Unit:
    """One HGNetV2ConvLayer: its sublayer path in the file, its attribute path in the torch module."""

    keras: str
    torch: str
    cin: int
    cout: int
    kernel: int
    groups: int = 1
    lab: bool = False


def _listed(base: str, i: int) -> str:
    return base if i == 0 else f"{base}_{i}"


def _ints(ctx: Ctx, key: str, n: int | None = None, minimum: int = 1) -> list[int]:
    value = ctx.config.get(key)
    if not isinstance(value, list) or (n is not None and len(value) != n) or not value or \
            any(isinstance(v, bool) or not isinstance(v, int) or v < minimum for v in value):
        raise ctx.unsupported(f"config {key!r} should be a list of {n or 'some'} integers >= {minimum}, found {value!r}")
    return value


def _flags(ctx: Ctx, key: str, n: int) -> list[bool]:
    value = ctx.config.get(key)
    if not isinstance(value, list) or len(value) != n or any(not isinstance(v, (bool, int)) or v not in (0, 1)
                                                             for v in value):
        raise ctx.unsupported(f"config {key!r} should be {n} true/false values, found {value!r}")
    return [bool(v) for v in value]  # keras-hub tests them for truth


def _image(ctx: Ctx) -> tuple[int | None, int | None, int]:
    channels_last(ctx)
    if ctx.config.get("channel_axis", -1) not in (-1, 3):
        raise ctx.unsupported(f"channel_axis {ctx.config.get('channel_axis')!r}; only the last axis is supported")
    if ctx.x.rank != 4 or ctx.x.shape[-1] is None:
        raise ctx.unsupported(f"expected an image (N, H, W, C) with C known, found {ctx.x.shape}")
    h, w, c = ctx.x.shape
    return h, w, c


def _out(size: int | None, kernel: int, stride: int) -> int | None:
    """A conv unit's output size: zeros (kernel - 1) // 2 on each side, then an unpadded conv."""
    return None if size is None else (size + 2 * ((kernel - 1) // 2) - kernel) // stride + 1


def _params(ctx: Ctx, units: list[Unit]) -> tuple[Param, ...]:
    """Each unit's conv kernel, BatchNorm (gamma, beta, mean, variance) and affine block (scale, bias)."""
    expected = {f"{u.keras}/{part}": n for u in units
                for part, n in (("convolution", 1), ("normalization", 4), *((("lab", 2),) if u.lab else ()))}
    keys = [k.split("/") for k in expected]
    shared = 0  # sublayer_weights names groups from below the prefix all of them share
    while all(len(k) > shared + 1 and k[shared] == keys[0][shared] for k in keys):
        shared += 1
    w = sublayer_weights(ctx, {"/".join(k[shared:]): n for k, n in zip(keys, expected.values())})

    def group(u: Unit, part: str) -> tuple[Variable, ...]:
        return w["/".join(f"{u.keras}/{part}".split("/")[shared:])]

    out: list[Param] = []
    for u in units:
        shapes = {"convolution": [(u.kernel, u.kernel, u.cin // u.groups, u.cout)], "normalization": [(u.cout,)] * 4,
                  "lab": [(), ()]}
        for part in ("convolution", "normalization", *(("lab",) if u.lab else ())):
            _check(ctx, u.keras + "/" + part, group(u, part), shapes[part])
        (kernel,), (gamma, beta, mean, var) = group(u, "convolution"), group(u, "normalization")
        t = f"{u.torch}." if u.torch else ""  # (a unit called on its own is the module itself)
        out += conv_bn_params(f"{t}conv", f"{t}bn", kernel, (gamma, beta, mean, var))
        if u.lab:
            scale, bias = group(u, "lab")
            out += [param("", f"{t}lab.scale", scale), param("", f"{t}lab.bias", bias)]
    return tuple(out)


def _check(ctx: Ctx, where: str, found: tuple[Variable, ...], shapes: list[tuple[int, ...]]) -> None:
    if [tuple(v.shape) for v in found] != shapes:
        raise ctx.unsupported(f"weights of {where} have shapes {[tuple(v.shape) for v in found]}, expected {shapes}",
                              "the file does not match its own config")


@converter(HUB + "HGNetV2Embeddings", wants="cf")
def hgnetv2_embeddings(ctx: Ctx) -> Converted:
    h, w, c = _image(ctx)
    _, mid, out = _ints(ctx, "stem_channels", 3)  # stem_channels[0] is only recorded: stem1 takes the image's
    if mid < 2:
        raise ctx.unsupported(f"stem_channels[1] = {mid}: stem2a would have {mid // 2} filters")
    act = ctx.config.get("hidden_act")
    if act is not None:
        act = cfg_str(ctx, "hidden_act", choices=ACTIVATIONS)
    lab = cfg_bool(ctx, "use_learnable_affine_block", False)
    units = [Unit(f"{n}_layer", n, i, o, k, lab=lab) for n, i, o, k in (
        ("stem1", c, mid, 3), ("stem2a", mid, mid // 2, 2), ("stem2b", mid // 2, mid, 2),
        ("stem3", 2 * mid, mid, 3), ("stem4", mid, out, 1))]
    # stem1 halves; padding1, stem2a (2x2), padding2, stem2b (2x2) and the 2x2 pool each keep it; stem3 halves
    size = lambda s: _out(_out(s, 3, 2), 3, 2)  # noqa: E731
    module = Module("KerasHubHGNetV2Embeddings", (c, mid, out, act, lab))
    return Converted((apply_module(module),), (TensorInfo((size(h), size(w), out), "cf"),), _params(ctx, units),
                     helpers=("KerasHubHGNetV2LearnableAffineBlock", "KerasHubHGNetV2ConvLayer",
                              "KerasHubHGNetV2Embeddings"))


def _encoder_units(stages: list[tuple[Any, ...]], channels: int, lab: bool) -> Iterator[Unit]:
    for i, (stage_in, mid, out, blocks, layers, kernel, downsample, light) in enumerate(stages):
        keras, torch = f"stages_list/{_listed(STAGE, i)}", f"stages.{i}"
        if downsample:  # groups = stage_in: Keras and torch both need it to divide the channels
            yield Unit(f"{keras}/downsample_layer", f"{torch}.downsample", channels, stage_in, 3, stage_in)
            channels = stage_in
        for j in range(blocks):
            kb, tb = f"{keras}/blocks_list/{_listed(BASIC, j)}", f"{torch}.blocks.{j}"
            cin = channels if j == 0 else out
            for k in range(layers):
                ku, tu, unit_in = f"{kb}/layer_list/{_listed(LIGHT if light else UNIT, k)}", f"{tb}.layers.{k}", \
                    cin if k == 0 else mid
                if light:
                    yield Unit(f"{ku}/conv1_layer", f"{tu}.conv1", unit_in, mid, 1)
                    yield Unit(f"{ku}/conv2_layer", f"{tu}.conv2", mid, mid, kernel, mid, lab)
                else:
                    yield Unit(ku, tu, unit_in, mid, kernel, lab=lab)
            yield Unit(f"{kb}/aggregation_squeeze_conv", f"{tb}.squeeze", cin + layers * mid, out // 2, 1, lab=lab)
            yield Unit(f"{kb}/aggregation_excitation_conv", f"{tb}.excite", out // 2, out, 1, lab=lab)
        channels = out


@converter(HUB + "HGNetV2Encoder", wants="cf")
def hgnetv2_encoder(ctx: Ctx) -> Converted:
    h, w, c = _image(ctx)
    ins = _ints(ctx, "stage_in_channels")
    n = len(ins)
    mids, outs = _ints(ctx, "stage_mid_channels", n), _ints(ctx, "stage_out_channels", n, minimum=2)
    blocks, layers = _ints(ctx, "stage_num_blocks", n), _ints(ctx, "stage_num_of_layers", n)
    kernels = _ints(ctx, "stage_kernel_size", n)
    downsample, light = _flags(ctx, "apply_downsample", n), _flags(ctx, "use_lightweight_conv_block", n)
    lab = cfg_bool(ctx, "use_learnable_affine_block", False)
    stages = list(zip(ins, mids, outs, blocks, layers, kernels, downsample, light))
    for i, (cin, stage_in) in enumerate(zip([c] + outs[:-1], ins)):  # a stage passes on its out channels
        if downsample[i] and cin % stage_in:
            raise ctx.unsupported(f"stage {i}: a downsample in {stage_in} groups of {cin} channels "
                                  "(keras-hub cannot build it either)")
    states = [TensorInfo((h, w, c), "cf")]
    for (_, _, out, *_), down in zip(stages, downsample):
        h, w = (_out(h, 3, 2), _out(w, 3, 2)) if down else (h, w)
        states.append(TensorInfo((h, w, out), "cf"))
    module = Module("KerasHubHGNetV2Encoder", (c, tuple(stages), lab))
    helpers = ("KerasHubHGNetV2LearnableAffineBlock", "KerasHubHGNetV2ConvLayer", "KerasHubHGNetV2ConvLayerLight",
               "KerasHubHGNetV2BasicLayer", "KerasHubHGNetV2Stage", "KerasHubHGNetV2Encoder")
    return Converted((apply_module(module),), tuple(states), _params(ctx, list(_encoder_units(stages, c, lab))),
                     helpers=helpers)


@converter(HUB + "HGNetV2ConvLayer", wants="cf")
def hgnetv2_conv_layer(ctx: Ctx) -> Converted:
    """One conv unit called on its own (HGNetV2ImageClassifier's ``head_last``)."""
    h, w, c = _image(ctx)
    cout, kernel, stride, groups = (cfg_int(ctx, k) for k in ("out_channels", "kernel_size", "stride", "groups"))
    act = ctx.config.get("activation")
    if act is not None:
        act = cfg_str(ctx, "activation", choices=ACTIVATIONS)
    lab = cfg_bool(ctx, "use_learnable_affine_block", False)
    if c % groups or cout % groups:  # in_channels is only recorded: the conv takes the tensor's
        raise ctx.unsupported(f"{groups} groups for {c} -> {cout} channels (keras-hub cannot build it either)")
    params = _params(ctx, [Unit("", "", c, cout, kernel, groups, lab)])  # the unit's own sublayers, no prefix
    module = Module("KerasHubHGNetV2ConvLayer", (c, cout, kernel, stride, groups, act, lab))
    out = TensorInfo((_out(h, kernel, stride), _out(w, kernel, stride), cout), "cf")
    return Converted((apply_module(module),), (out,), params,
                     helpers=("KerasHubHGNetV2LearnableAffineBlock", "KerasHubHGNetV2ConvLayer"))
