"""The SAME-padding modules (``SamePad``, ``SamePool``, ``Crop``) and how to inline them.

They live in ``tf2torch/runtime/same.py``, the runtime library generated files copy from (see its
docstring for the export rules they follow); this module gives tf2torch's code and the tests one place to
import them from, with the import lines their copied source needs and the one way to copy it
(``codegen/library.py``: the same inliner as every other helper in a generated file).
"""

from __future__ import annotations

from tf2torch.errors import UsageError

from ..codegen import library
from ..runtime.same import Crop, SamePad, SamePool

__all__ = ["INLINE_CLASSES", "INLINE_IMPORTS", "Crop", "SamePad", "SamePool", "inline_source"]

#: Import lines the inlined classes need, in the order to emit them.
INLINE_IMPORTS = ("import torch", "import torch.nn.functional as F", "from torch import nn")
#: Classes ``inline_source`` can return; the other modules they use are torch's own.
INLINE_CLASSES = ("SamePad", "SamePool", "Crop")


def inline_source(*names: str) -> str:
    """Source text of the named classes (default: all of ``INLINE_CLASSES``), for generated files.

    The text needs only ``INLINE_IMPORTS`` above it.

    Example:
        >>> import torch
        >>> src = "\\n".join(INLINE_IMPORTS) + "\\n\\n" + inline_source("SamePad")
        >>> namespace = {}
        >>> exec(compile(src, "generated.py", "exec"), namespace)
        >>> namespace["SamePad"]((3, 3), (2, 2), (1, 1))(torch.zeros(1, 1, 10, 10)).shape
        torch.Size([1, 1, 11, 11])
    """
    unknown = sorted(set(names) - set(INLINE_CLASSES))
    if unknown:
        raise UsageError(f"no inlinable class named {unknown}; choose from {list(INLINE_CLASSES)}")
    return library.inline_text(names or INLINE_CLASSES)
