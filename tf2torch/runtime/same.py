"""Torch modules that reproduce TensorFlow 'SAME' padding exactly: the run-time helpers.

Which module an op gets is not decided here: ``same.plan_same`` decides and ``same_torch`` spells the
plan (its table lists every case); generated model files and patched user models both build from that.
``SamePad`` / ``SamePool`` compute the padding from the input at run time (size unknown when converting);
``SamePool(pad=...)`` is also the static asymmetric average pool (its divisor counts real elements only);
``Crop`` trims a transposed conv's output.

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
(as ``F``) and ``nn.Module``, so generated model files can carry them and run without tf2torch: they are
runtime library code (``codegen/library.py`` inlines them by name; ``rewrite/modules.py`` has the import
lines they need). The pad arithmetic is written out in both ``SamePad`` and ``SamePool`` on purpose, so
each class inlines alone; the tests check both against ``same.py``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


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
    input elements, as TF does (torch's ``count_include_pad=False`` does that only for the symmetric
    padding torch itself adds, not for an explicit pad: see ``same.SamePlan``).
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

