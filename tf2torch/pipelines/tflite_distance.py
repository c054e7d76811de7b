"""How far a ``--dequantize`` model is from integer inference, measured at conversion on a probe input.

The float model (weights dequantized, no rounding, no saturation) and the emulation of LiteRT's integer
kernels (what ``convert`` writes without ``--dequantize``) are both generated and run here, in torch, on
one seeded probe: normal values, quantized with the model's own input scale for an integer input. The
distance goes into the report's notes; ``tf2torch verify`` measures the same against LiteRT itself. A model
whose integer form is not emulated gets a note saying so instead. Only this path imports torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..errors import Tf2TorchError
from ..options import ConvertOptions
from ..plan import TensorPlan
from . import Outcome


def distance_note(dequantized: Outcome, emulate: Callable[[ConvertOptions], Outcome], options: ConvertOptions,
                  interface: dict) -> str:
    """The report's line on the float model's distance from the integer one (``emulate``: the emulation's
    Outcome for these options)."""
    try:
        emulated = emulate(dataclasses.replace(options, dequantize=False))
    except Tf2TorchError as exc:  # the refusal's cause, without its file name and its --dequantize hint
        cause = str(exc).split(": ", 1)[-1].split("; convert with --dequantize", 1)[0]
        return (f"--dequantize distance: not measured at conversion, the integer form is not emulated "
                f"({cause[:200]}); `tf2torch verify` measures it against LiteRT")
    import numpy as np
    import torch

    rng = np.random.default_rng(0)
    ints, reals = [], []
    for entry in interface.get("inputs") or []:
        shape = (1, *entry["keras_shape"])
        if entry.get("layout") == "channels_first" and len(shape) > 2:
            shape = (shape[0], shape[-1], *shape[1:-1])
        x = rng.normal(size=shape)
        q = entry.get("quantization")
        if q is None:
            ints.append(torch.from_numpy(x.astype(np.float32)))
            reals.append(ints[-1])
            continue
        v = x / q["scale"]
        k = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5) + q["zero_point"], -128, 127)
        ints.append(torch.from_numpy(k.astype(np.int8)))
        reals.append(torch.from_numpy(((k - q["zero_point"]) * q["scale"]).astype(np.float32)))
    with torch.no_grad():
        exact = _outputs(_build(emulated), ints)
        approx = _outputs(_build(dequantized), reals)
    worst, steps = 0.0, 0.0
    for entry, e, a in zip(interface.get("outputs") or [], exact, approx):
        q = entry.get("quantization")
        e = e.double() if q is None else (e.double() - q["zero_point"]) * q["scale"]
        diff = float((a.double() - e).abs().max()) if e.numel() else 0.0
        worst = max(worst, diff / max(float(e.abs().max()), 1e-30))
        steps = max(steps, diff / q["scale"]) if q is not None else steps
    in_steps = f", {steps:.1f} output quantization steps" if steps else ""
    return (f"--dequantize distance from integer inference (the emulation of LiteRT's kernels) on a seeded probe "
            f"input: max |difference| / max |output| {worst:.2e}{in_steps}; `tf2torch verify` measures it "
            "against LiteRT")


def _build(outcome: Outcome) -> Any:
    """The generated model with its weights, imported as ``verify`` imports ``OUTDIR/model.py``: written to a
    temporary folder and loaded by the one loader of Python files (never ``exec`` of text)."""
    import sys
    import tempfile
    from pathlib import Path

    from ..runtime.userfile import import_python_file
    from ..write.torch_pt import to_torch

    with tempfile.TemporaryDirectory(prefix="tf2torch-probe-") as folder:
        path = Path(folder) / "model.py"
        path.write_text(outcome.model_source or "", encoding="utf-8")
        try:
            module = import_python_file(path)
        finally:
            if str(path.parent.resolve()) in sys.path:  # the loader adds a file's folder for its siblings: none here
                sys.path.remove(str(path.parent.resolve()))
        sys.modules.pop(module.__name__, None)  # a probe, not a module anyone imports again
        model = module.build_model()
    plans: list[TensorPlan] = list(outcome.plans)
    model.load_state_dict({p.key: to_torch(p.produce(), p.dtype) for p in plans}, strict=True)
    return model.eval()


def _outputs(model: Any, inputs: list) -> list:
    out = model(*inputs)
    return list(out) if isinstance(out, (tuple, list)) else [out]
