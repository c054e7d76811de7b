"""TF ops with weights or windows: convolutions, MatMul, bias adds, batch norms, pools, reductions.

Each becomes the Keras layer that computes the same thing (Conv2D, Dense, BatchNormalization, ...), so
SAME padding, layouts and epsilon are handled once, by the Keras converters. Only NHWC graphs are
converted: that is what TF writes on CPU and what every exporter emits for inference.
"""

from __future__ import annotations

import math

from .base import Missing, NodeCtx, Tensor, TFShape, Value, f32, tf_op

TF = "tf2torch>"


def nhwc(ctx: NodeCtx) -> None:
    fmt = ctx.attr("data_format", "NHWC")
    if fmt not in ("NHWC", "NDHWC", "NWC"):
        raise ctx.unsupported(f"data_format {fmt!r}: only channels-last graphs are converted",
                              "export the inference graph in NHWC (TF's CPU layout)")


def spatial_dims(ctx: NodeCtx, key: str, rank: int, default: int = 1) -> tuple[int, ...]:
    """The spatial entries of a 4-/5-D attribute (strides, dilations, ksize), checking batch and channel are 1."""
    value = ctx.attr(key)
    if value is None:
        return (default,) * (rank - 2)
    value = tuple(value)
    if len(value) != rank or value[0] != 1 or value[-1] != 1:
        raise ctx.unsupported(f"{key} {list(value)}: expected 1 on the batch and channel axes")
    return value[1:-1]


def tf_padding(ctx: NodeCtx) -> str:
    padding = ctx.attr("padding", "VALID")
    if padding not in ("SAME", "VALID", "EXPLICIT"):
        raise ctx.unsupported(f"padding {padding!r}")
    return padding


def out_size(size: int | None, k: int, s: int, d: int, padding: str) -> int | None:
    if size is None:
        return None
    if padding == "SAME":
        return math.ceil(size / s)
    return (size - (k - 1) * d - 1) // s + 1


def _explicit(ctx: NodeCtx, x: Tensor) -> Tensor:
    """EXPLICIT padding: a ZeroPadding2D before a VALID conv (the pads are in the attr, NHWC order)."""
    pads = tuple(ctx.attr("explicit_paddings", ()))
    if len(pads) != 8 or any(pads[:2]) or any(pads[6:]):
        raise ctx.unsupported(f"explicit_paddings {list(pads)}: expected 4 (before, after) pairs, zero on batch "
                              "and channels")
    padding = [[pads[2], pads[3]], [pads[4], pads[5]]]
    shape = (x.shape[0], *(None if s is None else s + a + b for s, (a, b) in zip(x.shape[1:3], padding)), x.shape[3])
    return ctx.layer("ZeroPadding2D", {"padding": padding, "data_format": "channels_last"}, [x], shape,
                     name=f"{ctx.node.name}/pad")


@tf_op("Conv2D", "DepthwiseConv2dNative", arity=2)
def conv2d(ctx: NodeCtx) -> tuple[Value, ...]:
    nhwc(ctx)
    x, kernel = ctx.tensor(0), ctx.const(1, "filter")
    if len(x.shape) != 4 or len(kernel.shape) != 4:
        raise ctx.unsupported(f"expected a 4-D input and filter, found {len(x.shape)}-D and {len(kernel.shape)}-D")
    kh, kw, cin, cout = kernel.shape
    strides, dilations = spatial_dims(ctx, "strides", 4), spatial_dims(ctx, "dilations", 4)
    padding = tf_padding(ctx)
    if padding == "EXPLICIT":
        x, padding = _explicit(ctx, x), "VALID"
    channels = x.shape[-1]
    config = {"kernel_size": [kh, kw], "strides": list(strides), "padding": padding.lower(),
              "dilation_rate": list(dilations), "use_bias": False, "activation": "linear",
              "data_format": "channels_last"}
    if ctx.op == "DepthwiseConv2dNative":
        if channels is not None and channels != cin:
            raise ctx.unsupported(f"filter for {cin} channels on a {channels}-channel input")
        out_c = cin * cout
        cls, weight = "DepthwiseConv2D", "depthwise_kernel"
        config["depth_multiplier"] = cout
    else:
        if channels is None or channels % cin:
            raise ctx.unsupported(f"filter for {cin} input channels on a {channels}-channel input")
        out_c = cout
        cls, weight = "Conv2D", "kernel"
        config.update(filters=cout, groups=channels // cin)
    shape = (x.shape[0], *(out_size(s, k, st, d, padding) for s, k, st, d in
                           zip(x.shape[1:3], (kh, kw), strides, dilations)), out_c)
    return (ctx.layer(cls, config, [x], shape, weights=[(weight, kernel)]),)


@tf_op("BiasAdd", "BiasAddV1", arity=2)
def bias_add(ctx: NodeCtx) -> tuple[Value, ...]:
    nhwc(ctx)
    x, bias = ctx.tensor(0), ctx.const(1, "bias")
    if ctx.fuse_bias(x, bias):
        return (x,)
    if x.merged is not None:
        raise ctx.unsupported("a bias add on a flattened tensor that is not a Dense's output")
    return (ctx.layer(TF + "ConstantOperand", {"op": "add", "shape": list(bias.shape)}, [x], x.shape,
                      weights=[("value", bias)]),)


@tf_op("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", arity=5)
def fused_batch_norm(ctx: NodeCtx) -> tuple[Value, ...]:
    nhwc(ctx)
    if ctx.attr("is_training", True):  # the attr's registered default is true
        raise ctx.unsupported("the graph computes batch statistics (is_training=True)",
                              "export the inference graph (is_training=False), where the moving statistics are used")
    x = ctx.tensor(0)
    scale, offset, mean, variance = (ctx.const(i, what) for i, what in
                                     ((1, "scale"), (2, "offset"), (3, "mean"), (4, "variance")))
    eps = ctx.attr("epsilon")
    if eps is None:  # stripped default attrs: FusedBatchNorm's registered default
        eps = 0.0001
    config = {"axis": -1, "epsilon": f32(eps), "center": True, "scale": True}
    weights = [("gamma", scale), ("beta", offset), ("moving_mean", mean), ("moving_variance", variance)]
    missing = Missing("the graph's batch statistics (is_training=False: not computed)")
    return (ctx.layer("BatchNormalization", config, [x], x.shape, weights=weights), *[missing] * 5)


@tf_op("MaxPool", "AvgPool")
def pool(ctx: NodeCtx) -> tuple[Value, ...]:
    nhwc(ctx)
    x = ctx.tensor(0)
    if len(x.shape) != 4:
        raise ctx.unsupported(f"a {len(x.shape)}-D input")
    window, strides, padding = spatial_dims(ctx, "ksize", 4), spatial_dims(ctx, "strides", 4), tf_padding(ctx)
    cls = "MaxPooling2D" if ctx.op == "MaxPool" else "AveragePooling2D"
    config = {"pool_size": list(window), "strides": list(strides), "padding": padding.lower(),
              "data_format": "channels_last"}
    shape = (x.shape[0], *(out_size(s, k, st, 1, padding) for s, k, st in zip(x.shape[1:3], window, strides)),
             x.shape[3])
    return (ctx.layer(cls, config, [x], shape),)


def axes_of(ctx: NodeCtx, i: int, rank: int) -> list[int]:
    axes = ctx.const(i, "axes").array().reshape(-1).tolist()
    return sorted({int(a) % rank for a in axes})


@tf_op("Mean", "Max", "Min", "Sum", arity=2)
def reduce(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    axes = axes_of(ctx, 1, len(x.shape))
    keep = bool(ctx.attr("keep_dims", False))
    if len(x.shape) == 4 and axes == [1, 2] and ctx.op in ("Mean", "Max"):  # H and W of NHWC: a global pool
        cls = "GlobalAveragePooling2D" if ctx.op == "Mean" else "GlobalMaxPooling2D"
        shape: TFShape = (x.shape[0], 1, 1, x.shape[3]) if keep else (x.shape[0], x.shape[3])
        return (ctx.layer(cls, {"keepdims": keep, "data_format": "channels_last"}, [x], shape),)
    if 0 in axes:
        raise ctx.unsupported("a reduction over the batch axis")
    out = tuple(1 if i in axes else s for i, s in enumerate(x.shape)) if keep else \
        tuple(s for i, s in enumerate(x.shape) if i not in axes)
    return (ctx.layer(TF + "Reduce", {"op": ctx.op.lower(), "axes": axes, "keepdims": keep}, [x], out),)


@tf_op("Softmax")
def softmax(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)  # tf.nn.softmax is over the last axis
    return (ctx.layer("Softmax", {"axis": -1}, [x], x.shape),)

