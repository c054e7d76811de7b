"""tf2torch: port trained TensorFlow and Keras models to PyTorch, exactly.

    >>> import tf2torch
    >>> spec = tf2torch.read("fixtures/keras3/cnn.keras")      # no TensorFlow needed
    >>> result = tf2torch.convert("fixtures/keras3/cnn.keras", "out")

    >>> tf2torch.verify("fixtures/keras3/cnn.keras", "out").ok    # TensorFlow needed
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import Tf2TorchError

if TYPE_CHECKING:
    from . import api
    from .api import Conversion, ConvertOptions, convert, read, verify

__all__ = ["Conversion", "ConvertOptions", "Tf2TorchError", "api", "convert", "read", "verify"]
__version__ = "0.1.0"
_API = ("api", "Conversion", "ConvertOptions", "convert", "read", "verify")


def __getattr__(name: str) -> object:
    """``api`` and its names load on first use, so ``tf2torch --help`` never pays for numpy."""
    if name in _API:
        import importlib

        api = importlib.import_module(".api", __name__)  # (`from . import api` would recurse into here)
        return api if name == "api" else getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
