"""The modes of ``tf2torch convert``, one module each, every one a ``run(spec, options) -> Outcome``.

- ``keras``: a Keras architecture → a generated PyTorch model (``layers/`` converters, ``codegen/``).
- ``onto_model``: the weights onto the user's own PyTorch model, patched where TF computes otherwise.
- ``state_dict``: no architecture to follow → a bare state_dict (dotted names, layouts by role).
- ``tf_graph``: a TF graph (frozen .pb, .meta, SavedModel signature) lowered to layers → ``keras``.
- ``tflite``: a TFLite model (.tflite) lowered to the same layers → ``keras``.

``api.convert`` reads the source, ``run`` picks the mode by ``MODES``, and the contract (``contract``)
checks the report the mode returns, for every mode alike. A new mode (a Hugging Face repository onto
its transformers twin) is one module here with a ``run`` and one line in ``MODES``.

Layers: ``docs/architecture.md`` ("Layers") states the order, ``tests/test_layering.py`` holds every import
to it (inside functions too): this package sits above the converters and below ``api``.
The mode modules are imported only when picked: they load the heavy converters of their mode alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..map.account import Report
from ..options import ConvertOptions
from ..plan import TensorPlan
from ..spec import ModelSpec


@dataclass
class Outcome:
    """What a mode produced: the write plans, the report, the model.py text, verify's taps."""

    plans: list[TensorPlan]
    report: Report
    model_source: str | None = None  # None for a bare state_dict
    taps: dict[str, str] = field(default_factory=dict)  # Keras layer -> module path (for verify)


@dataclass
class Conversion:
    """What ``convert`` did: the report, the plans it wrote (or would write), and the files (``tf2torch.hf``,
    a mode with a writer of its own, returns one too)."""

    report: Report
    plans: list[TensorPlan]
    model_source: str | None  # model.py text (None for a bare state_dict)
    out_dir: Path | None  # None for a dry run
    files: list[str] = field(default_factory=list)
    taps: dict[str, str] = field(default_factory=dict)  # Keras layer -> module path (for verify)
    # A .task bundle converted whole: each model's own conversion, by its OUT/<name> (report: the first's)
    members: dict[str, Conversion] = field(default_factory=dict)


# The first mode whose test holds converts the source. Order matters: --model wins over an architecture
# the file carries, which wins over a TF graph (a tf_keras SavedModel holds both); --weights-only turns
# a graph's model down. A new mode is one line here.
MODES: tuple[tuple[str, Callable[[ModelSpec, ConvertOptions], bool]], ...] = (
    ("tflite", lambda spec, options: spec.tflite is not None),  # its weights are in TFLite's layouts: no other mode
    ("onto_model", lambda spec, options: options.model is not None),
    ("keras", lambda spec, options: spec.graph is not None),
    ("tf_graph", lambda spec, options: spec.tf_graph is not None and not options.weights_only),
    ("state_dict", lambda spec, options: True),
)


def pick(spec: ModelSpec, options: ConvertOptions) -> str:
    """The name of the mode that converts ``spec`` (a module of this package)."""
    return next(name for name, applies in MODES if applies(spec, options))


def run(spec: ModelSpec, options: ConvertOptions) -> Outcome:
    """Convert ``spec`` in the mode ``pick`` chooses."""
    module = importlib.import_module(f"{__name__}.{pick(spec, options)}")
    return module.run(spec, options)
