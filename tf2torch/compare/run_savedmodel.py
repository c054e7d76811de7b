"""The TensorFlow side for SavedModels: a serving signature, final outputs only.

``tf.saved_model.load`` restores the traced graphs and the variables; no Python object from the
directory is deserialised. A signature has no layers to tap, so only the outputs are compared.
Outputs are matched to the PyTorch outputs by name (``output_0``, ``output_1``, ... or the names in
the conversion report), else in the signature's order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import UnsupportedError, UsageError
from .inputs import AUTO, InputSpec
from .outdir import OutDir
from .reference import Probe, TFRun, import_tf, to_numpy

SIGNATURE = "serving_default"


class SavedModelReference:
    kind = "savedmodel"

    def __init__(self, path: Path, outdir: OutDir) -> None:
        self.tf = import_tf()
        try:
            self.loaded = self.tf.saved_model.load(str(path))
        except Exception as exc:
            raise UnsupportedError(f"{path}: TensorFlow could not load the SavedModel "
                                   f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from exc
        signatures = dict(self.loaded.signatures)
        if not signatures:
            raise UnsupportedError(f"{path}: the SavedModel has no signatures to run; save it with a serving "
                                   "signature, or verify the Keras file instead")
        key = SIGNATURE if SIGNATURE in signatures else sorted(signatures)[0]
        self.signature_name, self.fn, self.outdir = key, signatures[key], outdir
        self.probes: list[Probe] = []
        self.notes = [f"SavedModel signature {key!r}: final outputs only (a signature has no layers to compare)"]

    def input_specs(self) -> list[InputSpec]:
        args, kwargs = self.fn.structured_input_signature
        if args:
            raise UnsupportedError(f"signature {self.signature_name!r} takes positional inputs; expected named ones")
        iface = self.outdir.interface.get("inputs") or []
        names = list(kwargs)
        keras_names = self.outdir.interface.get("keras_inputs") or []
        if len(keras_names) == len(names) and set(keras_names) == set(names):
            names = list(keras_names)  # the PyTorch forward's order
        specs = []
        for i, name in enumerate(names):
            spec = kwargs[name]
            info = iface[i] if i < len(iface) and isinstance(iface[i], dict) else {}
            shape = tuple(spec.shape.as_list()) if spec.shape.rank is not None else None
            if shape is None:
                raise UsageError(f"signature input {name!r} has no static rank; verify needs --inputs FILE.npz")
            specs.append(InputSpec(name=name, tf_shape=shape, layout=info.get("layout", AUTO),
                                   dtype=spec.dtype.as_numpy_dtype.__name__,
                                   aliases=(str(info["name"]),) if info.get("name") else ()))
        self._input_names = names
        return specs

    def run(self, inputs: Sequence[np.ndarray]) -> TFRun:
        if not hasattr(self, "_input_names"):
            self.input_specs()
        feed = {name: self.tf.constant(x) for name, x in zip(self._input_names, inputs)}
        try:
            out = self.fn(**feed)
        except Exception as exc:
            raise UnsupportedError(f"the SavedModel signature {self.signature_name!r} failed: "
                                   f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
        names = _output_order(list(out), self.outdir)
        return TFRun(outputs=[to_numpy(out[n]) for n in names], output_names=names)


def _output_order(names: list[str], outdir: OutDir) -> list[str]:
    wanted = [str(o.get("name")) for o in outdir.interface.get("outputs") or [] if isinstance(o, dict)]
    if wanted and set(wanted) == set(names):
        return wanted
    numbered = [re.fullmatch(r"output_(\d+)", n) for n in names]
    if all(numbered):
        return [n for _, n in sorted(zip((int(m.group(1)) for m in numbered if m), names))]
    return names  # the signature's own order (Keras writes it in the model's output order)

