"""TensorFlow 'SAME' padding as integer arithmetic (no torch, no TensorFlow).

TensorFlow pads so that ``out = ceil(in / stride)`` and splits the total padding with the *smaller*
half first, so an odd total puts the extra pixel at the end (bottom/right). PyTorch's ``padding=`` is
symmetric, so an odd total cannot be folded into the op: it needs an explicit pad first.

Per spatial dimension, with ``d`` the dilation and ``k_eff = (k - 1) * d + 1``::

    out    = ceil(in / s)
    total  = max((out - 1) * s + k_eff - in, 0)
    before = total // 2
    after  = total - before

Pair order is the layer's spatial order (H, W); ``torch_pad_order`` converts to ``F.pad``'s order
(last dimension first). Torch modules using these numbers live in ``tf2torch.rewrite.modules``.

Example:
    >>> same_padding(10, 3, 2)
    (0, 1)
    >>> plan = tf_same_conv_padding((10, 10), (3, 3), 2)
    >>> plan.padding, plan.pad
    ((0, 0), (0, 1, 0, 1))
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

from tf2torch.errors import UsageError

Pairs = tuple[tuple[int, int], ...]


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise UsageError(f"{name} must be a positive integer, found {value!r}; pass an int >= 1")
    return int(value)


def _per_dim(value: object, ndim: int, name: str, allow_none: bool = False) -> tuple:
    """Broadcast an int to ``ndim`` dims or check a sequence has ``ndim`` entries."""
    items = list(value) if isinstance(value, Sequence) and not isinstance(value, str) else [value] * ndim
    if len(items) != ndim:
        raise UsageError(
            f"{name} must have {ndim} entries (one per spatial dim), found {value!r}; "
            f"pass an int or a {ndim}-tuple"
        )
    return tuple(
        None if (allow_none and v is None) else _positive_int(v, f"{name}[{i}]") for i, v in enumerate(items)
    )


def _window(kernel: object, stride: object, dilation: object, ndim: int) -> tuple[tuple, tuple, tuple]:
    """Kernel, stride and dilation, each checked and given one entry per spatial dim."""
    kernel, stride = _per_dim(kernel, ndim, "kernel"), _per_dim(stride, ndim, "stride")
    return kernel, stride, _per_dim(dilation, ndim, "dilation")


def _ndim_of(kernel: object) -> int:
    if not isinstance(kernel, Sequence) or isinstance(kernel, str) or len(kernel) == 0:
        raise UsageError(
            f"kernel must be a non-empty tuple with one entry per spatial dim, found {kernel!r}; "
            "pass e.g. (3, 3) for a 2-D op"
        )
    return len(kernel)


def same_output_size(size: int, stride: int) -> int:
    """TF 'SAME' output length: ``ceil(size / stride)``."""
    size, stride = _positive_int(size, "size"), _positive_int(stride, "stride")
    return -(-size // stride)


def same_padding(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TF 'SAME' padding ``(before, after)`` of one spatial dimension of length ``size``."""
    size = _positive_int(size, "size")
    kernel, stride = _positive_int(kernel, "kernel"), _positive_int(stride, "stride")
    dilation = _positive_int(dilation, "dilation")
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    before = total // 2
    return before, total - before  # TF puts the extra pixel at the end (bottom/right), never the start


def same_padding_nd(sizes: Sequence[int], kernel: object, stride: object, dilation: object = 1) -> Pairs:
    """Per-dim ``(before, after)`` pairs in spatial order; ints broadcast to ``len(sizes)`` dims."""
    if not isinstance(sizes, Sequence) or isinstance(sizes, str) or len(sizes) == 0:
        raise UsageError(f"sizes must be a non-empty sequence of spatial sizes, found {sizes!r}")
    n = len(sizes)
    ks, ss, ds = _window(kernel, stride, dilation, n)
    return tuple(same_padding(sz, k, s, d) for sz, k, s, d in zip(sizes, ks, ss, ds))


def size_independent(kernel: int, stride: int, dilation: int = 1) -> bool:
    """True when the SAME padding of a dim is the same for every input length.

    ``total = max(k_eff - 1 - (in - 1) % s, 0)`` depends on ``in`` unless ``s == 1`` or ``k_eff == 1``.
    """
    kernel, stride = _positive_int(kernel, "kernel"), _positive_int(stride, "stride")
    return stride == 1 or (kernel - 1) * _positive_int(dilation, "dilation") == 0


def fold_symmetric(pairs: Pairs) -> tuple[int, ...] | None:
    """The op's own ``padding=`` when every dim pads equally on both sides, else ``None``."""
    if all(before == after for before, after in pairs):
        return tuple(before for before, _ in pairs)
    return None


def torch_pad_order(pairs: Pairs) -> tuple[int, ...]:
    """``F.pad`` / ``nn.ZeroPad2d`` order: last dim first, ``(W_before, W_after, H_before, H_after)``."""
    return tuple(amount for pair in reversed(pairs) for amount in pair)


@dataclass(frozen=True)
class ConvPadding:
    """How to reproduce TF 'SAME' for one conv or pool op in PyTorch.

    Exactly one of three shapes:
      * folded:  ``pad is None and not dynamic`` -- set the op's ``padding=padding``;
      * static:  ``pad`` is set -- apply ``F.pad(x, pad)`` (or ``nn.ZeroPadNd(pad)``), op ``padding=0``;
      * dynamic: the padding depends on an input size not known now -- use ``modules.SamePad``
        before a conv, ``modules.SamePool`` for a pool.
    """

    padding: tuple[int, ...]
    pad: tuple[int, ...] | None
    dynamic: bool


def tf_same_conv_padding(
    in_size: object, kernel: Sequence[int], stride: object, dilation: object = 1
) -> ConvPadding:
    """Plan TF 'SAME' padding for a conv/pool whose spatial input size may be unknown.

    Args:
        in_size: spatial sizes (H, W, ...) or ``None``; single entries may be ``None`` (unknown).
        kernel: kernel size per spatial dim (its length sets the number of dims).
        stride, dilation: int or one per spatial dim.

    Returns:
        A ``ConvPadding``. A dim whose size is unknown but whose padding is size-independent
        (stride 1, or a 1-wide kernel) is still planned statically.

    Example:
        >>> tf_same_conv_padding(None, (3, 3), 1)
        ConvPadding(padding=(1, 1), pad=None, dynamic=False)
    """
    n = _ndim_of(kernel)
    ks, ss, ds = _window(kernel, stride, dilation, n)
    sizes = _per_dim(in_size, n, "in_size", allow_none=True) if in_size is not None else (None,) * n
    pairs = []
    for size, k, s, d in zip(sizes, ks, ss, ds):
        if size is None and not size_independent(k, s, d):
            return ConvPadding(padding=(0,) * n, pad=None, dynamic=True)
        pairs.append(same_padding(size if size is not None else 1, k, s, d))
    folded = fold_symmetric(tuple(pairs))
    if folded is not None:
        return ConvPadding(padding=folded, pad=None, dynamic=False)
    return ConvPadding(padding=(0,) * n, pad=torch_pad_order(tuple(pairs)), dynamic=False)


@dataclass(frozen=True)
class TransposePadding:
    """Settings for ``nn.ConvTransposeNd`` to give TF's 'SAME' transposed-conv output.

    ``padding`` and ``output_padding`` go to the op; ``crop`` (``F.pad`` order, last dim first) is
    removed from the op's output afterwards, or ``None`` when nothing needs cropping.
    """

    padding: tuple[int, ...]
    output_padding: tuple[int, ...]
    crop: tuple[int, ...] | None


def transpose_same_padding(
    kernel: int, stride: int, dilation: int = 1, in_size: int | None = None, out_size: int | None = None
) -> tuple[int, int, int]:
    """One dim of TF's SAME transposed conv: ``(padding, output_padding, crop_after)`` for PyTorch.

    TF's transposed conv is the adjoint of a SAME conv from ``out_size`` (default ``in_size * stride``)
    down to ``in_size``: the full PyTorch output of length ``L = (in - 1) * s + k_eff`` is cut to
    ``[before, before + out_size)`` where ``before`` is that forward conv's SAME ``before``. PyTorch
    cuts ``padding`` from both ends and then adds ``output_padding`` back at the end, so an odd
    total (TF cuts one more at the end) needs one explicit crop.
    """
    kernel, stride = _positive_int(kernel, "kernel"), _positive_int(stride, "stride")
    dilation = _positive_int(dilation, "dilation")
    k_eff = (kernel - 1) * dilation + 1
    if out_size is None:
        # With out = in * s the forward conv's total is max(k_eff - s, 0) for every in: take in = 1.
        before, _ = same_padding(stride, kernel, stride, dilation)
        extra = stride - k_eff + 2 * before  # = out - L + 2 * before
    else:
        if in_size is None:
            raise UsageError("transposed SAME with an explicit out_size also needs in_size; pass both")
        in_size, out_size = _positive_int(in_size, "in_size"), _positive_int(out_size, "out_size")
        if same_output_size(out_size, stride) != in_size:
            raise UsageError(
                f"out_size must satisfy ceil(out_size / stride) == in_size for a SAME transposed conv, "
                f"found out_size {out_size} for in_size {in_size} at stride {stride} (TF rejects it too); "
                f"pass an out_size in ({(in_size - 1) * stride}, {in_size * stride}]"
            )
        before, _ = same_padding(out_size, kernel, stride, dilation)
        full = (in_size - 1) * stride + k_eff
        extra = out_size - full + 2 * before
    if extra >= 0:  # 0 <= extra < stride: PyTorch's output_padding (zeros + bias at the end, as TF)
        return before, extra, 0
    return before, 0, -extra  # TF cuts the extra pixel at the end: crop it after the op


def tf_same_transpose_padding(
    kernel: Sequence[int],
    stride: object,
    dilation: object = 1,
    in_size: object = None,
    out_size: object = None,
) -> TransposePadding:
    """Plan a TF 'SAME' ``conv*_transpose`` in PyTorch (``out = in * stride`` unless ``out_size``).

    Example:
        >>> tf_same_transpose_padding((3, 3), 2)  # not padding=1, output_padding=1: that shifts by one
        TransposePadding(padding=(0, 0), output_padding=(0, 0), crop=(0, 1, 0, 1))
    """
    n = _ndim_of(kernel)
    ks, ss, ds = _window(kernel, stride, dilation, n)
    ins = _per_dim(in_size, n, "in_size", allow_none=True) if in_size is not None else (None,) * n
    outs = _per_dim(out_size, n, "out_size", allow_none=True) if out_size is not None else (None,) * n
    dims = [transpose_same_padding(k, s, d, i, o) for k, s, d, i, o in zip(ks, ss, ds, ins, outs)]
    crop_pairs = tuple((0, crop) for _, _, crop in dims)
    return TransposePadding(
        padding=tuple(p for p, _, _ in dims),
        output_padding=tuple(op for _, op, _ in dims),
        crop=torch_pad_order(crop_pairs) if any(c for _, c in crop_pairs) else None,
    )
