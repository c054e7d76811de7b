"""The layout table: every TF → PyTorch weight layout change, in one place.

A ``Layout`` is a short list of primitive steps on the TF array (reshape, permute axes, slice, reorder
gate blocks, add a constant), so the output shape is known before any data is read (writers need it
for the safetensors header) and the report can print exactly what was done. Converters and the name
matcher look layouts up here by kind; nothing else transposes weights.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import strided
from ..errors import MappingError

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Step:
    kind: str  # "reshape" | "permute" | "slice" | "gates" | "add_block"
    shape_fn: Callable[[Shape], Shape] | None = None  # reshape: new shape from the current one
    axes: tuple[int, ...] = ()  # permute
    start: int = 0  # slice along axis 0: [start, stop) with stop=None meaning "to the end"
    stop: int | None = None
    order: tuple[int, ...] = ()  # gates: new order of the equal blocks along axis 0
    block: int = 0  # add_block: which of the gate blocks along axis 0 gets `value` added
    blocks: int = 0  # add_block: how many blocks along axis 0
    value: float = 0.0

    def shape(self, shape: Shape) -> Shape:
        # Shapes come from files: a weight of the wrong rank or size for its layer must fail here, as a
        # MappingError, before any plan exists (not as IndexError here or ValueError in apply()).
        if self.kind == "reshape":
            assert self.shape_fn is not None
            try:
                new = self.shape_fn(shape)
            except IndexError:
                raise MappingError(f"cannot reshape {shape}: it has too few dimensions") from None
            if math.prod(new) != math.prod(shape):
                raise MappingError(f"cannot reshape {shape} to {new}")
            return new
        if self.kind == "permute":
            if len(shape) != len(self.axes):
                raise MappingError(f"expected a rank-{len(self.axes)} weight, found shape {shape}")
            return tuple(shape[a] for a in self.axes)
        if self.kind == "slice" and (not shape or (self.stop or 0) > shape[0]):
            raise MappingError(f"cannot take rows [{self.start}, {self.stop}) of shape {shape}")
        blocks = len(self.order) if self.kind == "gates" else self.blocks if self.kind == "add_block" else 0
        if blocks and (not shape or shape[0] % blocks):
            raise MappingError(f"cannot split shape {shape} into {blocks} gate blocks along its first axis")
        if self.kind == "slice":
            stop = shape[0] if self.stop is None else self.stop
            return (stop - self.start, *shape[1:])
        return shape

    def apply(self, array: np.ndarray) -> np.ndarray:
        if self.kind == "reshape":
            array = array if array.flags.c_contiguous else strided.contiguous(array)
            return array.reshape(self.shape(array.shape))
        if self.kind == "permute":
            return array.transpose(self.axes)  # a view: copied (blocked) by whoever needs C order
        if self.kind == "slice":
            return array[self.start : self.stop]
        if self.kind == "gates":
            n = len(self.order)
            blocks = array.reshape(n, array.shape[0] // n, *array.shape[1:])
            return np.ascontiguousarray(blocks[list(self.order)]).reshape(array.shape)
        if self.kind == "add_block":
            out = np.array(array, copy=True)
            size = array.shape[0] // self.blocks
            out[self.block * size : (self.block + 1) * size] += np.asarray(self.value, dtype=array.dtype)
            return out
        raise ValueError(self.kind)


@dataclass(frozen=True)
class Layout:
    """A named layout change: TF array in, PyTorch array out."""

    name: str
    describe: str  # for reports, e.g. "(H, W, I, O) -> (O, I, H, W)"
    steps: tuple[Step, ...] = ()

    @property
    def is_identity(self) -> bool:
        return not self.steps

    def out_shape(self, shape: Shape) -> Shape:
        for step in self.steps:
            shape = step.shape(shape)
        return tuple(shape)

    def apply(self, array: np.ndarray, *, view: bool = False) -> np.ndarray:
        """The PyTorch array, C-contiguous; with ``view=True`` possibly a strided view of ``array``
        (no copy where the steps allow it: the streaming writer copies it band by band)."""
        for step in self.steps:
            array = step.apply(array)
        return array if view or array.flags.c_contiguous else strided.contiguous(array)


def _perm(*axes: int) -> Step:
    return Step("permute", axes=axes)


def _reshape(fn: Callable[[Shape], Shape]) -> Step:
    return Step("reshape", shape_fn=fn)


IDENTITY = Layout("identity", "unchanged")

TABLE: dict[str, Layout] = {
    "identity": IDENTITY,
    "dense": Layout("dense", "(in, out) -> (out, in)", (_perm(1, 0),)),
    "conv1d": Layout("conv1d", "(K, I, O) -> (O, I, K)", (_perm(2, 1, 0),)),
    "conv2d": Layout("conv2d", "(H, W, I, O) -> (O, I, H, W)", (_perm(3, 2, 0, 1),)),
    "conv3d": Layout("conv3d", "(D, H, W, I, O) -> (O, I, D, H, W)", (_perm(4, 3, 0, 1, 2),)),
    # Transposed convs store (…, out, in); torch's ConvTranspose wants (in, out, …): the same axis move.
    "conv1d_transpose": Layout("conv1d_transpose", "(K, O, I) -> (I, O, K)", (_perm(2, 1, 0),)),
    "conv2d_transpose": Layout("conv2d_transpose", "(H, W, O, I) -> (I, O, H, W)", (_perm(3, 2, 0, 1),)),
    "conv3d_transpose": Layout(
        "conv3d_transpose", "(D, H, W, O, I) -> (I, O, D, H, W)", (_perm(4, 3, 0, 1, 2),)
    ),
    # Depthwise: TF output channel c*M + m comes from input channel c, as in torch's groups=C conv,
    # so (C, M) flatten C-major into the output channel axis.
    "depthwise1d": Layout(
        "depthwise1d",
        "(K, C, M) -> (C*M, 1, K)",
        (_reshape(lambda s: (s[0], s[1] * s[2], 1)), _perm(1, 2, 0)),
    ),
    "depthwise2d": Layout(
        "depthwise2d",
        "(H, W, C, M) -> (C*M, 1, H, W)",
        (_reshape(lambda s: (s[0], s[1], s[2] * s[3], 1)), _perm(2, 3, 0, 1)),
    ),
    # MultiHeadAttention projections: (d, heads, head_dim) kernels become one Linear each.
    "mha_in_kernel": Layout(
        "mha_in_kernel", "(D, N, H) -> (N*H, D)", (_reshape(lambda s: (s[0], s[1] * s[2])), _perm(1, 0))
    ),
    "mha_in_bias": Layout("mha_in_bias", "(N, H) -> (N*H,)", (_reshape(lambda s: (s[0] * s[1],)),)),
    "mha_out_kernel": Layout(
        "mha_out_kernel", "(N, H, D) -> (D, N*H)", (_reshape(lambda s: (s[0] * s[1], s[2])), _perm(1, 0))
    ),
    # PReLU alpha shared over the spatial axes is stored (1, …, 1, C); torch's PReLU wants (C,).
    "flatten_to_1d": Layout("flatten_to_1d", "(…) -> (N,)", (_reshape(lambda s: (math.prod(s),)),)),
    # Hugging Face's TF Conv1D (GPT-2) keeps its bias as a (1, n) row; the torch twin's is (n,).
    "squeeze_row": Layout("squeeze_row", "(1, N) -> (N,)", (_reshape(lambda s: s[1:] if s[:1] == (1,) else s),)),
    # A 1x1 conv kernel (slim's "logits" conv, a conv "fc") onto an nn.Linear: (1, 1, in, out) -> (out, in).
    "conv1x1_dense": Layout("conv1x1_dense", "(1, 1, in, out) -> (out, in)",
                            (_reshape(lambda s: s[-2:] if all(d == 1 for d in s[:-2]) else s), _perm(1, 0))),
    # OpenAI GPT-2's 1x1-conv kernels are stored (1, nx, nf); transformers' Conv1D keeps (nx, nf).
    "squeeze_lead": Layout("squeeze_lead", "(1, …) -> (…)", (_reshape(lambda s: s[1:] if s[:1] == (1,) else s),)),
    # OpenAI ImageGPT's attention kernels are einsum operands (heads, head_dim, d_model): its output projection
    # c_proj is already (in = heads*head_dim, out) as transformers' Conv1D keeps it once the heads are merged.
    "merge_lead": Layout("merge_lead", "(A, B, C) -> (A*B, C)", (_reshape(lambda s: (s[0] * s[1], *s[2:])),)),
    # A vector that becomes one row of a table (ImageGPT's sos, appended to wte's rows).
    "row": Layout("row", "(N,) -> (1, N)", (_reshape(lambda s: (1, *s) if len(s) == 1 else s),)),
    # A 2-D table stored the other way round: mesh-TF T5's relative_attention_bias is (heads, buckets),
    # torch's nn.Embedding(buckets, heads) weight is (buckets, heads).
    "swap_axes": Layout("swap_axes", "(A, B) -> (B, A)", (_perm(1, 0),)),
    # Weight norm's magnitude g: HF TF keeps it (K, 1, 1) for a (O, I, K) direction whose norm is taken
    # over the kernel axis; torch's parametrizations keep (1, 1, K): the same numbers, axes reversed.
    "weight_norm_g": Layout("weight_norm_g", "(K, 1, 1) -> (1, 1, K)", (_perm(2, 1, 0),)),
    # TFLite keeps conv kernels as (O, H, W, I), transposed-conv kernels as (O, H, W, I) too (O: the
    # transposed conv's output channels) and fully-connected weights as (out, in): the TFLite lowering
    # reads them into TF's layouts, which the entries above then take to torch's.
    "tflite_conv2d": Layout("tflite_conv2d", "TFLite (O, H, W, I) -> TF (H, W, I, O)", (_perm(1, 2, 3, 0),)),
    "tflite_conv2d_transpose": Layout("tflite_conv2d_transpose", "TFLite (O, H, W, I) -> TF (H, W, O, I)",
                                      (_perm(1, 2, 0, 3),)),
    "tflite_fully_connected": Layout("tflite_fully_connected", "TFLite (out, in) -> TF (in, out)", (_perm(1, 0),)),
    # A scalar parameter that TF keeps as a (1,) vector: CLIP's and GroupViT's logit_scale (add_weight
    # shape=(1,)); the PyTorch twin's is a 0-d nn.Parameter.
    "to_scalar": Layout("to_scalar", "(1,) -> ()", (_reshape(lambda s: () if s == (1,) else s),)),
    # A bias added to a channels-first (N, C, L) output is a (C, 1) column in PyTorch (ConvBERT's
    # separable conv) where Keras' SeparableConv1D keeps a (C,) vector.
    "column": Layout("column", "(N,) -> (N, 1)", (_reshape(lambda s: (*s, 1)),)),
    # The same for an (N, C, H, W) output: SwiftFormer's layer scales, (C,) in TF, (C, 1, 1) in PyTorch.
    "column2d": Layout("column2d", "(N,) -> (N, 1, 1)", (_reshape(lambda s: (*s, 1, 1)),)),
    # A grouped linear layer (ConvBERT's GroupedLinearLayer): TF stores (out/g, in/g, g) and multiplies
    # by its (2, 1, 0) transpose; PyTorch stores that transpose, (g, in/g, out/g).
    "grouped_dense": Layout("grouped_dense", "(O/g, I/g, g) -> (g, I/g, O/g)", (_perm(2, 1, 0),)),
}


def get(kind: str) -> Layout:
    try:
        return TABLE[kind]
    except KeyError:
        raise MappingError(f"no layout {kind!r} in the layout table (known: {', '.join(sorted(TABLE))})") from None


def dense_after_flatten(spatial: Shape, channels: int) -> Layout:
    """A Dense kernel fed by Flatten over (…spatial, C) (TF), used after a channels-first flatten.

    TF rows are ordered (*spatial, C); a flatten over (C, *spatial) needs rows ordered (C, *spatial).
    Viewing the kernel as (*spatial, C, out), the move is the same as a conv kernel's.
    """
    n = len(spatial)
    axes = (n + 1, n, *range(n))
    rows = math.prod(spatial) * channels
    return Layout(
        f"dense_after_flatten{n}d",
        f"(({'·'.join(map(str, spatial))}·{channels}), out) rows HWC -> CHW, then (out, in)",
        (
            _reshape(lambda s: (*spatial, channels, s[1])),
            _perm(*axes),
            _reshape(lambda s: (s[0], rows)),
        ),
    )


def tflite_depthwise(channels: int) -> Layout:
    """A TFLite depthwise kernel (1, H, W, C*M) -> TF's (H, W, C, M): output channel c*M + m in both, so
    splitting the last axis C-major is all it takes (``channels``: the input's C)."""
    return Layout("tflite_depthwise", f"TFLite (1, H, W, {channels}*M) -> TF (H, W, {channels}, M)",
                  (_reshape(lambda s: (*s[1:3], channels, s[3] // channels) if len(s) == 4 and s[0] == 1 else s),))


def rnn_kernel(gate_order: tuple[int, ...] | None) -> Layout:
    """Keras LSTM/GRU `kernel` (in, G·u) / `recurrent_kernel` (u, G·u) -> torch (G·u, in), gates reordered."""
    steps: list[Step] = [_perm(1, 0)]
    if gate_order is not None:
        steps.append(Step("gates", order=gate_order))
    return Layout("rnn_kernel", f"(in, G*u) -> (G*u, in), gate blocks {gate_order or 'kept'}", tuple(steps))


def rnn_bias(gate_order: tuple[int, ...] | None, row: int | None = None) -> Layout:
    """Keras RNN bias (G·u,) or GRU reset_after bias (2, G·u) row `row` -> torch (G·u,), gates reordered."""
    steps: list[Step] = []
    if row is not None:
        steps += [Step("slice", start=row, stop=row + 1), _reshape(lambda s: (s[1],))]
    if gate_order is not None:
        steps.append(Step("gates", order=gate_order))
    return Layout("rnn_bias", f"bias{'' if row is None else f'[{row}]'}, gate blocks {gate_order or 'kept'}",
                  tuple(steps))


# TF1 LSTMCell / BasicLSTMCell: one kernel (in + u, 4u) with gates (i, j, f, o); torch: (i, f, g, o).
TF1_LSTM_GATES = (0, 2, 1, 3)
# Keras GRU gates (z, r, h); torch GRU gates (r, z, n).
KERAS_GRU_GATES = (1, 0, 2)


def tf1_lstm_kernel(input_size: int, part: str) -> Layout:
    """Split the concatenated TF1 LSTM kernel into torch's weight_ih (`part="ih"`) or weight_hh."""
    start, stop = (0, input_size) if part == "ih" else (input_size, None)
    return Layout(
        f"tf1_lstm_kernel_{part}",
        f"kernel[{start}:{'' if stop is None else stop}] (in, 4u) -> (4u, in), gates ijfo -> ifgo",
        (Step("slice", start=start, stop=stop), _perm(1, 0), Step("gates", order=TF1_LSTM_GATES)),
    )


def tf1_lstm_bias(forget_bias: float) -> Layout:
    """TF1 LSTM bias with the cell's `forget_bias` folded in (TF adds it at run time), gates reordered."""
    return Layout(
        "tf1_lstm_bias",
        f"gates ijfo -> ifgo, forget gate + {forget_bias:g}",
        (Step("gates", order=TF1_LSTM_GATES), Step("add_block", block=1, blocks=4, value=forget_bias)),
    )


def guess_for_rank(rank: int, leaf: str) -> str:
    """The layout kind of a bare checkpoint variable from its rank and (already renamed) leaf name."""
    if leaf != "weight":
        return "identity"
    return {2: "dense", 3: "conv1d", 4: "conv2d", 5: "conv3d"}.get(rank, "identity")
