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
(last dimension first). ``plan_same`` is the one SAME decision for convs and pools; ``same_torch``
spells a plan as torch modules (by name), ``modules`` holds the run-time helpers.

Example:
    >>> same_padding(10, 3, 2)
    (0, 1)
    >>> plan = plan_same((10, 10), (3, 3), 2)
    >>> plan.form, plan.pad
    ('pad', (0, 1, 0, 1))
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

from tf2torch.errors import UsageError

Pairs = tuple[tuple[int, int], ...]


def positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise UsageError(f"{name} must be a positive integer, found {value!r}; pass an int >= 1")
    return int(value)


def per_dim(value: object, ndim: int, name: str, allow_none: bool = False) -> tuple:
    """Broadcast an int to ``ndim`` dims or check a sequence has ``ndim`` entries."""
    items = list(value) if isinstance(value, Sequence) and not isinstance(value, str) else [value] * ndim
    if len(items) != ndim:
        raise UsageError(
            f"{name} must have {ndim} entries (one per spatial dim), found {value!r}; "
            f"pass an int or a {ndim}-tuple"
        )
    return tuple(
        None if (allow_none and v is None) else positive_int(v, f"{name}[{i}]") for i, v in enumerate(items)
    )


def same_window(kernel: object, stride: object, dilation: object, ndim: int) -> tuple[tuple, tuple, tuple]:
    """Kernel, stride and dilation, each checked and given one entry per spatial dim."""
    kernel, stride = per_dim(kernel, ndim, "kernel"), per_dim(stride, ndim, "stride")
    return kernel, stride, per_dim(dilation, ndim, "dilation")


def ndim_of(kernel: object) -> int:
    if not isinstance(kernel, Sequence) or isinstance(kernel, str) or len(kernel) == 0:
        raise UsageError(
            f"kernel must be a non-empty tuple with one entry per spatial dim, found {kernel!r}; "
            "pass e.g. (3, 3) for a 2-D op"
        )
    return len(kernel)


def same_output_size(size: int, stride: int) -> int:
    """TF 'SAME' output length: ``ceil(size / stride)``."""
    size, stride = positive_int(size, "size"), positive_int(stride, "stride")
    return -(-size // stride)


def same_padding(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TF 'SAME' padding ``(before, after)`` of one spatial dimension of length ``size``."""
    size = positive_int(size, "size")
    kernel, stride = positive_int(kernel, "kernel"), positive_int(stride, "stride")
    dilation = positive_int(dilation, "dilation")
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    before = total // 2
    return before, total - before  # TF puts the extra pixel at the end (bottom/right), never the start


def same_padding_nd(sizes: Sequence[int], kernel: object, stride: object, dilation: object = 1) -> Pairs:
    """Per-dim ``(before, after)`` pairs in spatial order; ints broadcast to ``len(sizes)`` dims."""
    if not isinstance(sizes, Sequence) or isinstance(sizes, str) or len(sizes) == 0:
        raise UsageError(f"sizes must be a non-empty sequence of spatial sizes, found {sizes!r}")
    n = len(sizes)
    ks, ss, ds = same_window(kernel, stride, dilation, n)
    return tuple(same_padding(sz, k, s, d) for sz, k, s, d in zip(sizes, ks, ss, ds))


def size_independent(kernel: int, stride: int, dilation: int = 1) -> bool:
    """True when the SAME padding of a dim is the same for every input length.

    ``total = max(k_eff - 1 - (in - 1) % s, 0)`` depends on ``in`` unless ``s == 1`` or ``k_eff == 1``.
    """
    kernel, stride = positive_int(kernel, "kernel"), positive_int(stride, "stride")
    return stride == 1 or (kernel - 1) * positive_int(dilation, "dilation") == 0


def fold_symmetric(pairs: Pairs) -> tuple[int, ...] | None:
    """The op's own ``padding=`` when every dim pads equally on both sides, else ``None``."""
    if all(before == after for before, after in pairs):
        return tuple(before for before, _ in pairs)
    return None


def torch_pad_order(pairs: Pairs) -> tuple[int, ...]:
    """``F.pad`` / ``nn.ZeroPad2d`` order: last dim first, ``(W_before, W_after, H_before, H_after)``."""
    return tuple(amount for pair in reversed(pairs) for amount in pair)


KINDS = ("conv", "max", "avg")


@dataclass(frozen=True)
class SamePlan:
    """How one TF 'SAME' conv / max pool / avg pool is reproduced in PyTorch: the one decision every
    consumer (generated code, patched user models, the run-time modules) translates, never re-makes.

    ``form`` is one of:
      * ``"folded"``:  symmetric, so it goes into the op's own ``padding=padding``;
      * ``"pad"``:     asymmetric (TF's extra pixel at the end): ``F.pad(x, pad, value=pad_value)``
        before an op with ``padding=0`` -- for an avg pool, with the count-excluding division;
      * ``"dynamic"``: the padding depends on an input size not known now: computed at run time.

    ``exclude_pad`` (avg pools only): divide each window by its count of *real* elements, as TF's
    AvgPool does. For ``"folded"`` that is torch's ``count_include_pad=False``: torch then divides by
    ``(h_end - h_start) * ...`` with the window clipped to the input, which is TF's count whenever the
    padding is symmetric (and SAME's symmetric ``p = total / 2 <= (k - 1) / 2`` is always within
    torch's "at most half the kernel" limit). It cannot serve ``"pad"``: torch's padding is symmetric,
    so the extra pixel must be an explicit pad, and torch's count then includes it (SamePool counts).

    ``sized``: static padding was planned for this input size and another size would pad differently
    (a stride > 1 with a kernel wider than 1), so the model must refuse other sizes (the size guard).
    """

    kind: str  # "conv", "max" or "avg"
    form: str  # "folded", "pad" or "dynamic"
    padding: tuple[int, ...]  # the op's own symmetric padding= ("folded"; zeros otherwise)
    pad: tuple[int, ...] | None  # F.pad order, last dim first ("pad" only)
    pad_value: float  # what the padding holds: 0 for convs and avg pools, -inf for max pools (TF's)
    exclude_pad: bool  # avg pool: the divisor is the count of real elements
    sized: bool  # needs the input-size guard

    @property
    def dynamic(self) -> bool:
        return self.form == "dynamic"


def plan_same(in_size: object, kernel: Sequence[int], stride: object, dilation: object = 1,
              kind: str = "conv") -> SamePlan:
    """Plan TF 'SAME' for a conv (``kind="conv"``) or a max / avg pool whose input size may be unknown.

    Args:
        in_size: spatial sizes (H, W, ...) or ``None``; single entries may be ``None`` (unknown).
        kernel: kernel size per spatial dim (its length sets the number of dims).
        stride, dilation: int or one per spatial dim (pools: dilation 1).
        kind: "conv", "max" or "avg".

    A dim whose size is unknown but whose padding is size-independent (stride 1, or a 1-wide kernel)
    is still planned statically, and needs no guard.

    Example:
        >>> plan_same(None, (3, 3), 1).padding
        (1, 1)
        >>> p = plan_same((10, 10), (3, 3), 2, kind="max")
        >>> p.form, p.pad, p.pad_value, p.sized
        ('pad', (0, 1, 0, 1), -inf, True)
    """
    if kind not in KINDS:
        raise UsageError(f"kind must be one of {KINDS}, found {kind!r}")
    n = ndim_of(kernel)
    ks, ss, ds = same_window(kernel, stride, dilation, n)
    sizes = per_dim(in_size, n, "in_size", allow_none=True) if in_size is not None else (None,) * n
    value = float("-inf") if kind == "max" else 0.0  # TF pads a max pool with -inf: padding never wins
    common = {"kind": kind, "pad_value": value, "exclude_pad": kind == "avg"}
    zeros = (0,) * n
    pairs = []
    for size, k, s, d in zip(sizes, ks, ss, ds):
        if size is None and not size_independent(k, s, d):
            return SamePlan(form="dynamic", padding=zeros, pad=None, sized=False, **common)
        pairs.append(same_padding(size if size is not None else 1, k, s, d))
    sized = not all(size_independent(k, s, d) for k, s, d in zip(ks, ss, ds))
    folded = fold_symmetric(tuple(pairs))
    if folded is not None:
        return SamePlan(form="folded", padding=folded, pad=None, sized=sized, **common)
    return SamePlan(form="pad", padding=zeros, pad=torch_pad_order(tuple(pairs)), sized=sized, **common)
