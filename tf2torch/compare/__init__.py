"""``tf2torch verify``: run the original in TensorFlow and the conversion in PyTorch, compare per layer.

    >>> from tf2torch.compare import verify
    >>> result = verify("fixtures/keras3/cnn.keras", "out")      # needs TensorFlow
    >>> result.ok, result.first_diverging
    (True, None)

Modules, in pipeline order: ``outdir`` (what a convert output holds), ``inputs`` (shapes, layouts,
seeded data), ``run_tf`` / ``tf1_graph`` (the reference), ``run_torch`` (the conversion, with forward
hooks), ``compare`` (per-layer statistics and the verdict), ``result`` (table and JSON), ``plot``.
"""

from __future__ import annotations

from .result import Row, VerifyResult
from .run import verify

__all__ = ["Row", "VerifyResult", "verify"]
