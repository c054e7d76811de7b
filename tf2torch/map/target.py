"""The user's own PyTorch model as a mapping target (``--model FILE.py:CALLABLE``).

The user's file is the user's code (not an input file), so it is imported, by the rule every user
file follows (``tf2torch/userfile.py``); the callable is a class or a zero-argument factory returning
an ``nn.Module``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..runtime.userfile import import_python_file  # (the one loader, as generated files carry it)
from .match import TargetParam


@dataclass(frozen=True)
class ModelRef:
    path: Path
    attr: str

    def __str__(self) -> str:
        return f"{self.path}:{self.attr}"


def parse_model_ref(text: str) -> ModelRef:
    path, sep, attr = text.rpartition(":")
    if not sep or not path or not attr.isidentifier():
        raise UsageError(f"--model {text!r}: expected FILE.py:CALLABLE, e.g. wrn.py:WideResNet")
    file = Path(path)
    if file.suffix != ".py" or not file.is_file():
        raise UsageError(f"--model {text!r}: {file} is not an existing .py file")
    return ModelRef(file, attr)


def build_user_model(ref: ModelRef) -> Any:
    """Import the user's file (once per version of it) and call the callable; returns the ``nn.Module``."""
    import torch.nn as nn

    try:
        module = import_python_file(ref.path)
        factory = getattr(module, ref.attr, None)
        if factory is None or not callable(factory):
            raise UsageError(f"--model {ref}: {ref.path} defines no callable {ref.attr!r}; "
                             f"name a class or function of that file after the ':'")
        model = factory()
    except UsageError:
        raise
    except Exception as exc:  # the user's code failed: say where, keep it one line
        raise UsageError(f"--model {ref}: building the model raised {type(exc).__name__}: {exc}") from None
    if not isinstance(model, nn.Module):
        raise UsageError(f"--model {ref}: {ref.attr}() returned {type(model).__name__}, expected a torch.nn.Module")
    return model.eval()


def _torch_kind(module: Any) -> str:
    """The torch.nn class a module is (or subclasses): a user's ``class MyConv(nn.Conv2d)`` is a Conv2d."""
    if module is None:
        return ""
    for cls in type(module).__mro__:
        if cls.__module__.startswith("torch.nn.modules"):
            return cls.__name__
    return type(module).__name__


def target_params(model: Any) -> list[TargetParam]:
    """Every state_dict entry with its owning module's type (and groups, for depthwise detection)."""
    owners = dict(model.named_modules())
    buffers = {k for k, _ in model.named_buffers()}
    params = []
    for key, tensor in model.state_dict().items():
        owner = owners.get(key.rpartition(".")[0])
        params.append(TargetParam(
            key=key,
            shape=tuple(tensor.shape),
            module_type=_torch_kind(owner),
            groups=int(getattr(owner, "groups", 1) or 1),
            is_buffer=key in buffers,
        ))
    return params
