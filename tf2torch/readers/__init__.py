"""Readers: every source format to a ``tf2torch.spec.ModelSpec``, without TensorFlow."""
