"""tf2torch: port trained TensorFlow and Keras models to PyTorch, exactly."""

__version__ = "0.1.0"
