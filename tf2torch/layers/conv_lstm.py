"""ConvLSTM1D / 2D / 3D as the helper ``KerasConvLSTM`` (one input conv and one recurrent conv per layer,
torch's ``nn.ConvNd``; the gates i, f, c, o stay in Keras's order along the output channels)."""

from __future__ import annotations

from ..codegen import nodes as n
from .base import Converted, Ctx, Module, Op, TensorInfo
from .common import bind, cfg_bool, cfg_int, cfg_ints, cfg_str, name_of, param
from .registry import converter

_ACTIVATIONS = ("tanh", "sigmoid", "relu", "hard_sigmoid", "linear")


def _activation(ctx: Ctx, key: str, default: str) -> str:
    name = name_of(ctx.config.get(key, default)) or "linear"
    if name not in _ACTIVATIONS:
        raise ctx.unsupported(f"{key} {name!r} (supported: {', '.join(_ACTIVATIONS)})")
    if name == "hard_sigmoid" and ctx.keras_version == 2:  # tf_keras: clip(0.2 x + 0.5), not relu6(x + 3) / 6
        if key != "recurrent_activation":
            raise ctx.unsupported("Keras 2's hard_sigmoid as a ConvLSTM's activation")
        return "keras2_hard_sigmoid"
    return name


@converter("ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", wants="keras", weights=("kernel", "recurrent_kernel", "bias"))
def conv_lstm(ctx: Ctx) -> Converted:
    dims = int(ctx.layer.class_name[-2])
    if ctx.x.rank != dims + 3 or ctx.x.shape[-1] is None:
        raise ctx.unsupported(f"expected (N, T, {', '.join(['S'] * dims)}, C) with C known, found {ctx.x.shape}")
    if len(ctx.inputs) != 1 or ctx.x.mask or ctx.call.kwargs.get("mask") is not None:
        raise ctx.unsupported("masks, initial states and extra tensors are not supported")
    if cfg_str(ctx, "data_format", "channels_last") != "channels_last" or cfg_bool(ctx, "stateful", False):
        raise ctx.unsupported("channels_first data or stateful=True")
    filters, kernel = cfg_int(ctx, "filters"), cfg_ints(ctx, "kernel_size", dims)
    strides, dilation = cfg_ints(ctx, "strides", dims, 1), cfg_ints(ctx, "dilation_rate", dims, 1)
    padding = cfg_str(ctx, "padding", "valid", ("valid", "same"))
    if any(k % 2 == 0 for k in kernel):  # the recurrent conv is always "same": even kernels pad unevenly
        raise ctx.unsupported(f"an even kernel size {kernel} (Keras's 'same' recurrent conv pads it asymmetrically)")
    if padding == "same" and any(s != 1 for s in strides):
        raise ctx.unsupported("padding='same' with strides > 1 (TF pads it asymmetrically)", "use strides=1")
    pads = tuple(d * (k - 1) // 2 for k, d in zip(kernel, dilation)) if padding == "same" else 0
    spatial = tuple(None if s is None else (s if padding == "same" else (s - d * (k - 1) - 1) // st + 1)
                    for s, k, d, st in zip(ctx.x.shape[1:-1], kernel, dilation, strides))
    use_bias = cfg_bool(ctx, "use_bias", True)
    w = bind(ctx, ["kernel", "recurrent_kernel"] + (["bias"] if use_bias else []))
    layout = {1: "conv1d", 2: "conv2d", 3: "conv3d"}[dims]
    params = [param("", "input_conv.weight", w["kernel"], layout),
              param("", "recurrent_conv.weight", w["recurrent_kernel"], layout)]
    if use_bias:
        params.append(param("", "input_conv.bias", w["bias"]))
    module = Module("KerasConvLSTM", (dims, ctx.x.shape[-1], filters, kernel, strides, pads, dilation,
                                      tuple((k - 1) // 2 for k in kernel)), (
        ("activation", _activation(ctx, "activation", "tanh")),
        ("recurrent_activation", _activation(ctx, "recurrent_activation", "sigmoid")),
        *((("use_bias", False),) if not use_bias else ())))
    call = n.call(n.M, n.X, go_backwards=True) if cfg_bool(ctx, "go_backwards", False) else n.call(n.M, n.X)
    steps = ctx.x.shape[0]
    sequences = cfg_bool(ctx, "return_sequences", False)
    exprs = [n.X[0] if sequences else n.X[1]]
    infos = [TensorInfo((steps, *spatial, filters))] if sequences else [TensorInfo((*spatial, filters))]
    if cfg_bool(ctx, "return_state", False):  # Keras: output, then h, then c
        exprs += [n.X[1], n.X[2]]
        infos += [TensorInfo((*spatial, filters))] * 2
    pick = Op(exprs[0] if len(exprs) == 1 else n.Tuple(tuple(exprs)))
    return Converted((Op(call, module), pick), tuple(infos), tuple(params), helpers=("KerasConvLSTM",))
