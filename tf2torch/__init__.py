"""tf2torch: port trained TensorFlow and Keras models to PyTorch, exactly.

    >>> import tf2torch
    >>> spec = tf2torch.read("fixtures/keras3/cnn.keras")      # no TensorFlow needed
    >>> result = tf2torch.convert("fixtures/keras3/cnn.keras", "out")

    >>> tf2torch.verify("fixtures/keras3/cnn.keras", "out").ok    # TensorFlow needed
    True
"""

from . import api
from .api import Conversion, convert, read, verify
from .errors import Tf2TorchError

__all__ = ["Conversion", "Tf2TorchError", "api", "convert", "read", "verify"]
__version__ = "0.1.0"
