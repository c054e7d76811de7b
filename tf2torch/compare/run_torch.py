"""The PyTorch side: import OUTDIR/model.py by path, run it with forward hooks on the compared modules.

The file is imported by the rule every user file follows (``tf2torch/userfile.py``): under a private
module name fixed by its path and contents, so a verify run leaves no ``model`` module behind, two
OUTDIRs never see each other's classes, and an edited model.py is executed again.
Hooks keep a *copy* of each module's first output: a later in-place op (``ReLU(inplace=True)``, as in
the WideResNet of user report 000) would otherwise change the captured tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FormatError, UnsupportedError
from ..runtime.userfile import import_python_file  # (the one loader, as generated files carry it)


@dataclass
class TorchRun:
    outputs: list[np.ndarray]
    captured: dict[str, np.ndarray] = field(default_factory=dict)  # module path -> first output
    kinds: dict[str, str] = field(default_factory=dict)  # module path -> module class name
    missing: dict[str, str] = field(default_factory=dict)  # module path -> why nothing was captured


def load_model(out_dir: Path) -> Any:
    try:
        module = import_python_file(out_dir / "model.py")
    except Exception as exc:
        raise FormatError(f"{out_dir / 'model.py'}: importing it failed ({type(exc).__name__}: {exc}); "
                          "expected a tf2torch output that imports; convert again") from exc
    loader = getattr(module, "load_model", None)
    if not callable(loader):
        raise FormatError(f"{out_dir / 'model.py'}: has no load_model(); is it a tf2torch output? convert again")
    try:
        return loader()
    except Exception as exc:
        raise FormatError(f"{out_dir / 'model.py'}: load_model() failed ({type(exc).__name__}: {exc})") from exc


def run(model: Any, inputs: Sequence[np.ndarray], hook_paths: Sequence[str]) -> TorchRun:
    """``model(*inputs)`` in eval mode without gradients; the first output of every hooked module."""
    import torch

    result = TorchRun(outputs=[])
    handles = []
    for path in dict.fromkeys(hook_paths):
        try:
            module = model.get_submodule(path)
        except AttributeError:
            result.missing[path] = "no such module in the PyTorch model"
            continue
        result.kinds[path] = type(module).__name__
        handles.append(module.register_forward_hook(_capture(path, result.captured)))
    model.eval()
    tensors = [torch.from_numpy(np.ascontiguousarray(x)) for x in inputs]
    try:
        with torch.no_grad():
            out = model(*tensors)
    except Exception as exc:
        raise UnsupportedError(f"the PyTorch model failed on inputs of shapes "
                               f"{[tuple(t.shape) for t in tensors]}: {type(exc).__name__}: {exc}") from exc
    finally:
        for handle in handles:
            handle.remove()
    for path in result.kinds:
        if path not in result.captured:
            result.missing[path] = "the module was not called in forward() (or returned no tensor)"
    result.outputs = [_numpy(t) for t in _flatten(out)]
    return result


def _capture(path: str, captured: dict[str, np.ndarray]):
    def hook(_module: Any, _args: Any, output: Any) -> None:
        if path in captured:  # a module called twice (shared weights): its first call is compared
            return
        tensors = _flatten(output)
        if tensors:  # an RNN returns (output, state): the output is what Keras's layer returns
            captured[path] = _numpy(tensors[0])

    return hook


def _flatten(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flatten(v)]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flatten(v)]
    return []


def _numpy(tensor: Any) -> np.ndarray:
    import torch

    tensor = tensor.detach()
    if tensor.dtype in (torch.float16, torch.bfloat16):  # numpy has no bfloat16: compare in float32
        tensor = tensor.float()
    return tensor.cpu().clone().numpy()
