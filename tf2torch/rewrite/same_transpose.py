"""TensorFlow 'SAME' transposed convolutions (``conv*_transpose``) as PyTorch settings (integer math).

A transposed conv's SAME output size is ``in * stride`` for every input size, so unlike a conv or a
pool its plan never depends on the input size and needs neither run-time padding nor a size guard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tf2torch.errors import UsageError
from tf2torch.rewrite.same import (
    ndim_of,
    per_dim,
    positive_int,
    same_output_size,
    same_padding,
    same_window,
    torch_pad_order,
)


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
    kernel, stride = positive_int(kernel, "kernel"), positive_int(stride, "stride")
    dilation = positive_int(dilation, "dilation")
    k_eff = (kernel - 1) * dilation + 1
    if out_size is None:
        # With out = in * s the forward conv's total is max(k_eff - s, 0) for every in: take in = 1.
        before, _ = same_padding(stride, kernel, stride, dilation)
        extra = stride - k_eff + 2 * before  # = out - L + 2 * before
    else:
        if in_size is None:
            raise UsageError("transposed SAME with an explicit out_size also needs in_size; pass both")
        in_size, out_size = positive_int(in_size, "in_size"), positive_int(out_size, "out_size")
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
    n = ndim_of(kernel)
    ks, ss, ds = same_window(kernel, stride, dilation, n)
    ins = per_dim(in_size, n, "in_size", allow_none=True) if in_size is not None else (None,) * n
    outs = per_dim(out_size, n, "out_size", allow_none=True) if out_size is not None else (None,) * n
    dims = [transpose_same_padding(k, s, d, i, o) for k, s, d, i, o in zip(ks, ss, ds, ins, outs)]
    crop_pairs = tuple((0, crop) for _, _, crop in dims)
    return TransposePadding(
        padding=tuple(p for p, _, _ in dims),
        output_padding=tuple(op for _, op, _ in dims),
        crop=torch_pad_order(crop_pairs) if any(c for _, c in crop_pairs) else None,
    )
