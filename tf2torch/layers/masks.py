"""Keras masks through a generated model: where one is made, which layers carry it on, which use it.

``Embedding(mask_zero=True)`` makes ``ids != 0`` and ``Masking(mask_value)`` makes ``(x != value).any(-1)``
(a (N, T) bool tensor, a local of forward()). Layers that keep the time axis and ignore the mask carry
it on; the recurrent layers use it (``KerasMaskedRNN``: masked steps carry state and output), and so does
MultiHeadAttention (Keras 3 reads the query's and value's masks even though its config does not say so). A masked
tensor reaching any other layer (a pooling or attention layer Keras would compute masked) is refused by
name: computing it unmasked would give other numbers with no error. Layers that neither support masking
nor take a mask (``DROP``: Conv1D, max pooling, ...) end it, in both Keras versions; BatchNormalization
takes Keras 3's ``mask=`` but uses it only for its training statistics. Keras 3 fills a mask in at run time
for a layer whose call takes one (``TAKES``) even where it recorded none (a call with ``training=``).
"""

from __future__ import annotations

from typing import Any

from ..codegen import nodes as n
from ..errors import UnsupportedError
from ..spec import TensorRef

# Layers Keras passes a mask through unchanged (supports_masking, same time axis), and that ignore it.
CARRY = frozenset({
    "Dropout", "SpatialDropout1D", "GaussianNoise", "GaussianDropout", "AlphaDropout", "ActivityRegularization",
    "Identity", "Dense", "Activation", "ReLU", "LeakyReLU", "ELU", "PReLU", "LayerNormalization",
    "BatchNormalization", "UnitNormalization", "RMSNormalization",
})
# Their converters read the mask (MultiHeadAttention: the query's and value's, as Keras 3 does; its output
# keeps the query's mask; GlobalAveragePooling1D: the mean over the unmasked steps).
USE = frozenset({"LSTM", "GRU", "SimpleRNN", "RNN", "Bidirectional", "MultiHeadAttention", "GlobalAveragePooling1D",
                 "GlobalAvgPool1D"})
# Layers that neither support masking nor take a mask, in Keras 3 and tf_keras alike (supports_masking False,
# no `mask` in call, compute_mask not overridden; checked on instances of both): Keras computes them unmasked
# and their outputs carry no mask (tf_keras drops it silently, Keras 3 with a warning), so no layer after them
# sees it, an attention included.
DROP = frozenset({
    "Conv1D", "SeparableConv1D", "DepthwiseConv1D", "Conv1DTranspose", "MaxPooling1D", "MaxPool1D",
    "AveragePooling1D", "AvgPool1D", "GlobalMaxPooling1D", "GlobalMaxPool1D", "Flatten", "ZeroPadding1D",
    "Cropping1D", "UpSampling1D", "Reshape", "Permute",
})
# Layers whose call takes Keras 3's mask= and uses it only when training (BatchNormalization: the masked
# batch moments); at inference they compute as if unmasked, and keep the mask on (CARRY).
UNUSED_AT_INFERENCE = frozenset({"BatchNormalization"})
# Layers that read their inputs' Keras masks themselves in Keras 3 (no mask= argument recorded for them).
# Attention and AdditiveAttention take a list, so Keras records no mask= for them, yet fills it in from the
# tensors' masks when the model runs: a masked one changes its outputs (checked against Keras in the tests).
IMPLICIT_READERS = frozenset({"MultiHeadAttention", "GroupQueryAttention", "Attention", "AdditiveAttention"})


def reads_implicitly(class_name: str) -> bool:
    return class_name in IMPLICIT_READERS or class_name.startswith("keras_hub>")


# Layers whose Keras 3 call takes `mask` (and computes with it; BatchNormalization only when training). Keras 3
# records it as mask= only for a call on one tensor of the layer's dtype with no keyword argument (a call with
# training= copies its kwargs, converting its inputs, before the mask is filled in), yet fills it in from the
# input's mask when the model runs either way: such a layer uses the tracked mask (USE, CARRY) or is refused,
# and a mask on its way to one is never dropped.
TAKES = frozenset({
    "LSTM", "GRU", "SimpleRNN", "RNN", "Bidirectional", "GlobalAveragePooling1D", "GlobalAvgPool1D",
    "BatchNormalization", "Softmax", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "Attention", "AdditiveAttention",
})


def takes(class_name: str, config: Any) -> bool:
    """Whether Keras 3 hands this layer its input's mask when the model runs, recorded or not (TimeDistributed
    hands it on, step by step, to its inner layer if that one takes it)."""
    if class_name == "TimeDistributed":
        inner = config.get("layer") if isinstance(config, dict) else None
        return not isinstance(inner, dict) or takes(str(inner.get("class_name")), inner.get("config") or {})
    return class_name in TAKES or reads_implicitly(class_name)


# Elementwise merges: Keras ANDs their inputs' masks; they carry a mask when every masked input has the same one.
MERGE = frozenset({"Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum"})


def made_by(class_name: str, config: Any, input_expr: n.Expr) -> n.Expr | None:
    """The expression of the mask this layer makes from its input, if it makes one."""
    if class_name == "Embedding" and config.get("mask_zero") is True:
        return n.Compare(input_expr, ("!=",), (n.Const(0),))
    if class_name == "Masking":
        value = config.get("mask_value", 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return n.method(n.Compare(input_expr, ("!=",), (n.Const(float(value)),)), "any", dim=-1)
    return None


def carried(class_name: str, config: Any) -> bool:
    """Whether the layer's output keeps its input's mask (a recurrent layer keeps it with its sequences)."""
    if class_name == "MultiHeadAttention" or class_name in MERGE:
        return True
    if class_name == "Bidirectional":
        inner = config.get("layer")
        return isinstance(inner, dict) and isinstance(inner.get("config"), dict) and \
            inner["config"].get("return_sequences") is True
    if class_name in USE:
        return config.get("return_sequences") is True
    return class_name in CARRY


Readers = dict[tuple[str, int, int], list[tuple[Any, int]]]  # tensor (layer, call, output) -> (layer, call)


def check_attention_reads(readers: Readers, layer: Any, index: int) -> None:
    """Refuse a masked tensor that this MultiHeadAttention call and another layer both read.

    Keras's MultiHeadAttention clears the masks of the tensors it reads, so a layer reading the same
    tensor after it sees no mask: what that layer computes depends on Keras's execution order. Only a
    merge with this attention's own output (a residual ``Add([x, attention(x, x)])``) is unaffected:
    the attention's output carries the same mask, and the merge ANDs them.
    """
    for ref in layer.calls[index].inputs:
        blocked = list(dict.fromkeys(
            other.name for other, j in readers.get((ref.layer, ref.node, ref.index), [])
            if (other.name, j) != (layer.name, index)
            and other.class_name not in DROP  # computes the same with the mask or without
            and not (other.class_name in MERGE and layer.name in {r.layer for r in other.calls[j].inputs})))
        if blocked:
            raise UnsupportedError(
                f"layer {layer.name!r} (MultiHeadAttention) reads a masked tensor that {', '.join(blocked[:3])} "
                "also read(s); Keras clears that tensor's mask when the attention reads it, so what they "
                "compute depends on Keras's execution order; give each its own Embedding/Masking output")


def ends_here(readers: Readers, layer: Any, index: int, keras_version: int) -> bool:
    """Keras 3 only: whether a mask reaching this layer (one that neither takes nor reads it) can be
    dropped, as Keras drops it or hands it on only as recorded mask= arguments: true unless a layer that
    reads masks implicitly (an attention), a nested model, or a layer taking a mask it was not recorded
    with (called with training=) is downstream of it, not counting what follows a DROP layer."""
    if keras_version != 3 or takes(layer.class_name, layer.config):
        return False
    seen, frontier = {(layer.name, index)}, [(layer.name, index)]
    while frontier:
        name, call = frontier.pop()
        for key, readers_of in readers.items():
            if key[:2] != (name, call):
                continue
            for reader, j in readers_of:
                if reader.class_name in DROP:  # its output has no mask in either Keras
                    continue
                if reads_implicitly(reader.class_name) or reader.graph is not None or (
                        takes(reader.class_name, reader.config)
                        and not isinstance(reader.calls[j].kwargs.get("mask"), TensorRef)):
                    return False
                if (reader.name, j) not in seen:
                    seen.add((reader.name, j))
                    frontier.append((reader.name, j))
    return True


def call_mask(ctx: Any) -> n.Expr | None:
    """The mask a layer call uses, as a node: Keras 3's recorded ``mask=`` tensor (the hole of the input
    after the positional ones), or the mask Keras 2 computes implicitly (a local); None without one."""
    if isinstance(ctx.call.kwargs.get("mask"), TensorRef):
        return n.arg(len(ctx.inputs) - 1)
    return n.Name(ctx.x.mask) if ctx.x.mask else None


def at_call(readers: Readers, layer: Any, index: int, arg_masks: list[str], keras_version: int) -> str:
    """The Keras mask call ``index`` of ``layer`` computes with and hands on ("" for none: also when the
    mask ends here), or UnsupportedError naming the layer where Keras would apply a mask tf2torch does not."""
    mask = next((m for m in arg_masks if m), "")
    name, cls = layer.name, layer.class_name
    if cls in MERGE and len({m for m in arg_masks if m}) > 1:
        raise UnsupportedError(f"layer {name!r} ({cls}) merges tensors with different Keras masks, which Keras "
                               "combines and tf2torch does not; remove a mask")
    if cls == "MultiHeadAttention" and mask:
        check_attention_reads(readers, layer, index)
    if isinstance(layer.calls[index].kwargs.get("mask"), TensorRef) and cls not in USE | UNUSED_AT_INFERENCE:
        raise UnsupportedError(f"layer {name!r} ({cls}) is called with a Keras mask, which tf2torch does not apply "
                               "there; remove the mask, or port this layer by hand")
    if not mask or cls in CARRY | USE | MERGE:
        return mask
    # Keras 3 records a mask as mask= arguments for the layers that take one: past a layer that neither takes
    # nor reads it, only an attention downstream (which reads masks itself) could still see it; a DROP layer's
    # output has no mask in either Keras, so not even an attention does
    if cls in DROP or ends_here(readers, layer, index, keras_version):
        return ""
    # (Keras 3: also a layer taking a mask it was not recorded with, or one on the way to such a layer)
    raise UnsupportedError(f"layer {name!r} ({cls}) receives a Keras mask (from Embedding(mask_zero=True) or "
                           "Masking), which Keras would apply there (or hand on to a layer that does) and tf2torch "
                           "does not; remove the mask, or port this layer by hand")
