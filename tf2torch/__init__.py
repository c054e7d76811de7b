"""tf2torch: port trained TensorFlow and Keras models to PyTorch, exactly.

    >>> import tf2torch
    >>> spec = tf2torch.read("fixtures/keras3/cnn.keras")      # no TensorFlow needed
    >>> result = tf2torch.convert("fixtures/keras3/cnn.keras", "out")

``tf2torch.verify`` (TensorFlow needed) lives in ``tf2torch.verify``.
"""

from . import api
from .api import Conversion, convert, read
from .errors import Tf2TorchError

__all__ = ["Conversion", "Tf2TorchError", "api", "convert", "read"]
__version__ = "0.1.0"
