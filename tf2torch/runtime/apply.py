"""Apply padding / epsilon rewrites to a user's model without changing its state_dict keys.

This is runtime library code (``codegen/library.py``): its definitions are copied verbatim into patched
``model.py`` files (they run without tf2torch), and it is the same code tf2torch runs in-process, so what
is tested is what ships.

A conv that needs an explicit pad keeps its class and parameters; its class is swapped for a subclass
that pads first (``TFPadBefore``), and the pad module (no parameters, no buffers) is a child named
``tf_pad``. A SAME pool is replaced by the module(s) its plan spells (``same_torch.pool_specs``, the
same as generated code gets): pools have no state, so nothing is lost, and the port's own settings
(``ceil_mode``, ``count_include_pad``) cannot disagree with TF's.
"""

from __future__ import annotations

import torch  # noqa: F401  (the inlined helpers use it)
from torch import nn

from .same import SamePad, SamePool


class TFPadBefore:
    """Mixin: pad the input with ``self.tf_pad`` (TF 'SAME', asymmetric) before the original forward."""

    def forward(self, x):
        return super().forward(self.tf_pad(x))


_PADDED_CLASSES = {}
_CONSTANT_PADS = {1: nn.ConstantPad1d, 2: nn.ConstantPad2d, 3: nn.ConstantPad3d}


def _pad_before(module, pad):
    cls = type(module)
    if cls not in _PADDED_CLASSES:
        _PADDED_CLASSES[cls] = type(f"TFSame{cls.__name__}", (TFPadBefore, cls), {})
    module.__class__ = _PADDED_CLASSES[cls]
    module.padding = (0,) * len(module.kernel_size) if isinstance(module.kernel_size, tuple) else 0
    module.tf_pad = pad


def build_module(cls, args, kwargs=()):
    """A module from a ``(class name, args, kwargs)`` spec: ``nn.X`` is torch's, else a helper above."""
    factory = getattr(nn, cls[3:]) if cls.startswith("nn.") else {"SamePad": SamePad, "SamePool": SamePool}[cls]
    return factory(*args, **dict(kwargs))


def apply_rewrites(model, rewrites):
    """Apply ``(kind, module_path, args)`` rewrites in place; returns the model.

    kinds: "padding" (args: the op's new symmetric padding), "pad" (args: F.pad amounts, pad value),
    "dynamic" (a conv; args: kernel, stride, dilation), "pool" (args: module specs, run in order, that
    replace the pool), "eps" (args: the BatchNorm epsilon).
    """
    for kind, path, args in rewrites:
        module = model.get_submodule(path)
        if kind == "padding":
            module.padding = tuple(args) if isinstance(module.padding, tuple) else args[0]
        elif kind == "pad":
            amounts, value = args
            _pad_before(module, _CONSTANT_PADS[len(amounts) // 2](tuple(amounts), value))
        elif kind == "dynamic":
            kernel, stride, dilation = args
            _pad_before(module, SamePad(kernel, stride, dilation))
        elif kind == "pool":
            built = [build_module(*spec) for spec in args]
            parent_path, _, name = path.rpartition(".")
            parent = model.get_submodule(parent_path) if parent_path else model
            setattr(parent, name, built[0] if len(built) == 1 else nn.Sequential(*built))
        elif kind == "eps":
            module.eps = float(args)
        else:
            raise ValueError(f"unknown rewrite kind {kind!r}")
    return model
