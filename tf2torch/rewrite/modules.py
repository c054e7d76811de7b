"""Torch modules that reproduce TensorFlow 'SAME' padding exactly.

Which module to use (the ``make_*`` factories below decide, from ``same.py``'s plan):

==========================  ===============================  ======================================
op                          input size known                 input size unknown (dynamic)
==========================  ===============================  ======================================
conv (incl. ``groups=``)    the op's ``padding=`` if         ``SamePad`` before the op
                            symmetric, else ``ZeroPadNd``
                            before it
max pool                    ``MaxPoolNd(padding=p)`` if      ``SamePool(mode="max")``
                            symmetric, else ``SamePool(
                            mode="max", pad=...)``
avg pool                    ``AvgPoolNd(padding=p,           ``SamePool(mode="avg")``
                            count_include_pad=False)`` if
                            symmetric, else ``SamePool(
                            mode="avg", pad=...)``
conv transpose              the op's ``padding`` / ``output_padding``, then ``Crop`` when TF cuts
                            the extra pixel at the end (never size-dependent for out = in * stride)
==========================  ===============================  ======================================

"Unknown" only matters for strided ops: at stride 1 (or a 1-wide kernel) SAME padding is the same
for every size, so those are planned statically even without a size.

None of these modules has parameters or buffers, so adding them leaves a model's ``state_dict``
keys unchanged. All pass ``torch.export.export`` with static and with dynamic spatial sizes.

torch.export with dynamic sizes (torch 2.13): plain Python integer math on ``x.shape[i]`` (``//``,
``%``, ``max``) traces into symbolic ints and ``F.pad`` accepts them, so the run-time padding is in
the exported graph, not baked in. Three things matter: (1) write the total as
``(k - 1) * d - (size - 1) % s`` and apply ``max(., 0)`` only when it can be negative -- an
unneeded ``max`` stops export proving output sizes ("Constraints violated"); (2) ``max_pool1d``
specialises the length, so 1-D pools run as 2-D on a ``(.., 1, L)`` plane; (3) export specialises
sizes that could be 0 or 1, so an explicit ``Dim`` needs a ``min`` where every output size is >= 2
(``min=6`` works for all our modules) -- or use ``Dim.AUTO``, whose program then rejects at run
time only the inputs that would give a size-1 output.

Inlining: ``SamePad``, ``SamePool`` and ``Crop`` use only ``torch`` and ``torch.nn.functional``
(as ``F``) and ``nn.Module``, nothing else from this file, so generated model files can carry them
and run without tf2torch: emit ``INLINE_IMPORTS``, then ``inline_source("SamePad", ...)`` (the
classes' own source, via ``inspect.getsource``). The pad arithmetic is written out in both
``SamePad`` and ``SamePool`` on purpose, so each class inlines alone; the tests check both against
``same.py``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from tf2torch.errors import UsageError
from tf2torch.rewrite.same import (
    _ndim_of,
    _per_dim,
    tf_same_conv_padding,
    tf_same_transpose_padding,
)

#: Import lines the inlined classes need, in the order to emit them.
INLINE_IMPORTS = ("import torch", "import torch.nn.functional as F", "from torch import nn")
#: Classes ``inline_source`` can return; the other modules used here are torch's own.
INLINE_CLASSES = ("SamePad", "SamePool", "Crop")


class SamePad(nn.Module):
    """TF 'SAME' zero padding computed from the input's spatial size at run time.

    Put it before a conv (any ``groups=``) built with ``padding=0``. Works for 1-D, 2-D and 3-D:
    the last ``len(kernel_size)`` dims of the input are padded.
    """

    def __init__(self, kernel_size, stride, dilation):
        super().__init__()
        self.kernel_size = tuple(int(k) for k in kernel_size)
        self.stride = tuple(int(s) for s in stride)
        self.dilation = tuple(int(d) for d in dilation)

    def forward(self, x):
        n = len(self.kernel_size)
        pads = []
        for i in reversed(range(n)):  # F.pad wants the last dim first
            size, k, s, d = x.shape[i - n], self.kernel_size[i], self.stride[i], self.dilation[i]
            total = (k - 1) * d - (size - 1) % s  # = (ceil(size / s) - 1) * s + (k - 1) * d + 1 - size
            if (k - 1) * d < s - 1:  # only then can it be negative; an unneeded max() would stop
                total = max(total, 0)  # torch.export proving output sizes (see the module docstring)
            pads += [total // 2, total - total // 2]  # TF puts the extra pixel at the end (bottom/right)
        return F.pad(x, pads)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, dilation={self.dilation}"


class SamePool(nn.Module):
    """TF 'SAME' max or average pooling, 1-D to 3-D (input ``(N, C, *spatial)``).

    ``mode="max"`` pads with -inf. ``mode="avg"`` divides each window's sum by its count of *real*
    input elements, as TF does (torch's ``count_include_pad`` only covers symmetric padding).
    ``pad`` (``F.pad`` order, last dim first) fixes the padding for a known input size; ``None``
    computes it from the input at run time.
    """

    def __init__(self, kernel_size, stride, mode, pad=None):
        super().__init__()
        if mode not in ("max", "avg"):
            raise ValueError(f"mode must be 'max' or 'avg', found {mode!r}")
        self.kernel_size = tuple(int(k) for k in kernel_size)
        self.stride = tuple(int(s) for s in stride)
        self.mode = mode
        self.pad = None if pad is None else tuple(int(p) for p in pad)

    def forward(self, x):
        n = len(self.kernel_size)
        pads = self.pad
        if pads is None:
            pads = []
            for i in reversed(range(n)):  # F.pad wants the last dim first
                size, k, s = x.shape[i - n], self.kernel_size[i], self.stride[i]
                total = k - 1 - (size - 1) % s  # = (ceil(size / s) - 1) * s + k - size
                if k < s:  # only then can it be negative (see SamePad)
                    total = max(total, 0)
                pads += [total // 2, total - total // 2]  # TF puts the extra pixel at the end
        kernel, stride = self.kernel_size, self.stride
        if n == 1:  # pool a (..., 1, L) plane: max_pool1d fixes L under torch.export, avg_pool1d
            x, kernel, stride = x.unsqueeze(-2), (1,) + kernel, (1,) + stride  # has no divisor_override
        if self.mode == "max":
            pool = F.max_pool3d if n == 3 else F.max_pool2d
            out = pool(F.pad(x, pads, value=float("-inf")), kernel, stride)
        else:
            pool = F.avg_pool3d if n == 3 else F.avg_pool2d
            ones = torch.ones_like(x[:1, :1])  # the real elements; the padding around them is 0
            # divisor_override=1 gives exact window sums: one division per output, as in TF's kernel
            sums = pool(F.pad(x, pads), kernel, stride, divisor_override=1)
            counts = pool(F.pad(ones, pads), kernel, stride, divisor_override=1)
            out = sums / counts
        return out.squeeze(-2) if n == 1 else out

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, mode={self.mode!r}, pad={self.pad}"


class Crop(nn.Module):
    """Remove ``crop`` elements (``F.pad`` order: last dim first, before/after pairs) from the input."""

    def __init__(self, crop):
        super().__init__()
        self.crop = tuple(int(c) for c in crop)

    def forward(self, x):
        return F.pad(x, [-c for c in self.crop])  # negative padding crops

    def extra_repr(self):
        return f"crop={self.crop}"


def inline_source(*names: str) -> str:
    """Source text of the named classes (default: all of ``INLINE_CLASSES``), for generated files.

    The text needs only ``INLINE_IMPORTS`` above it.

    Example:
        >>> src = "\\n".join(INLINE_IMPORTS) + "\\n\\n" + inline_source("SamePad")
        >>> namespace = {}
        >>> exec(compile(src, "generated.py", "exec"), namespace)
        >>> namespace["SamePad"]((3, 3), (2, 2), (1, 1))(torch.zeros(1, 1, 10, 10)).shape
        torch.Size([1, 1, 11, 11])
    """
    unknown = sorted(set(names) - set(INLINE_CLASSES))
    if unknown:
        raise UsageError(f"no inlinable class named {unknown}; choose from {list(INLINE_CLASSES)}")
    return "\n\n".join(inspect.getsource(globals()[name]) for name in (names or INLINE_CLASSES))


# --- factories: pick the module for one op from same.py's plan ------------------------------------

_ZERO_PAD = {1: nn.ZeroPad1d, 2: nn.ZeroPad2d, 3: nn.ZeroPad3d}
_MAX_POOL = {1: nn.MaxPool1d, 2: nn.MaxPool2d, 3: nn.MaxPool3d}
_AVG_POOL = {1: nn.AvgPool1d, 2: nn.AvgPool2d, 3: nn.AvgPool3d}


def _ndim(kernel: Sequence[int]) -> int:
    n = _ndim_of(kernel)
    if n not in _ZERO_PAD:
        raise UsageError(
            f"kernel must have 1, 2 or 3 spatial dims, found {tuple(kernel)!r}; "
            f"torch has no {n}-D pad or pool"
        )
    return n


def make_conv_pad(
    in_size: object, kernel: Sequence[int], stride: object, dilation: object = 1
) -> nn.Module | None:
    """Module to run before a conv (any ``groups=``) built with ``padding=0``, or ``None``.

    ``None`` means the padding folds into the op: build it with
    ``padding=tf_same_conv_padding(in_size, kernel, stride, dilation).padding``.

    Args:
        in_size: spatial input size (H, W, ...), ``None`` or with ``None`` entries if unknown.
        kernel: kernel size per spatial dim; stride, dilation: int or per dim.

    Example:
        >>> make_conv_pad((10, 10), (3, 3), 2)
        ZeroPad2d((0, 1, 0, 1))
        >>> make_conv_pad(None, (3, 3), 2)
        SamePad(kernel_size=(3, 3), stride=(2, 2), dilation=(1, 1))
    """
    n = _ndim(kernel)
    plan = tf_same_conv_padding(in_size, kernel, stride, dilation)
    if plan.dynamic:
        return SamePad(kernel, _per_dim(stride, n, "stride"), _per_dim(dilation, n, "dilation"))
    if plan.pad is None:
        return None
    return _ZERO_PAD[n](plan.pad)


def make_max_pool_same(in_size: object, kernel: Sequence[int], stride: object) -> nn.Module:
    """A complete TF 'SAME' max pool (no parameters, so it can replace a model's pool module).

    Example:
        >>> make_max_pool_same((9, 9), (3, 3), 2)
        MaxPool2d(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=1, ceil_mode=False)
    """
    n = _ndim(kernel)
    strides = _per_dim(stride, n, "stride")
    plan = tf_same_conv_padding(in_size, kernel, strides)
    if plan.dynamic or plan.pad is not None:
        return SamePool(kernel, strides, "max", pad=plan.pad)
    return _MAX_POOL[n](kernel, strides, padding=plan.padding)  # torch's own padding is -inf here, as TF


def make_avg_pool_same(in_size: object, kernel: Sequence[int], stride: object) -> nn.Module:
    """A complete TF 'SAME' average pool: divisor = count of real elements in each window.

    Example:
        >>> make_avg_pool_same((10, 10), (3, 3), 2)
        SamePool(kernel_size=(3, 3), stride=(2, 2), mode='avg', pad=(0, 1, 0, 1))
    """
    n = _ndim(kernel)
    strides = _per_dim(stride, n, "stride")
    plan = tf_same_conv_padding(in_size, kernel, strides)
    if plan.dynamic or plan.pad is not None:
        return SamePool(kernel, strides, "avg", pad=plan.pad)
    # symmetric: count_include_pad=False makes torch divide by the real count, as TF does
    return _AVG_POOL[n](kernel, strides, padding=plan.padding, count_include_pad=False)


def make_transpose_crop(
    kernel: Sequence[int],
    stride: object,
    dilation: object = 1,
    in_size: object = None,
    out_size: object = None,
) -> nn.Module | None:
    """``Crop`` to run after a ConvTransposeNd, or ``None``; set the op's ``padding`` and
    ``output_padding`` from ``tf_same_transpose_padding`` (same arguments)."""
    _ndim(kernel)
    plan = tf_same_transpose_padding(kernel, stride, dilation, in_size, out_size)
    return None if plan.crop is None else Crop(plan.crop)
