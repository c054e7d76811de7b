"""The SAME conv/pool grids through the paths converted models really take, against Keras (the truth).

One Keras model per grid holds every case as a parallel branch on one input of unknown size, so a
grid costs one Keras build, one conversion per input size (static) or one in all (dynamic), and one
Keras run per size -- not one of each per case. Two paths:

* ``generated``: tf2torch's conversion of the saved Keras model (``convert_in_memory``): the model.py
  Keras users get (``layers/padding.py`` translating ``plan_same``).
* ``patched``: a user's naive PyTorch port (each branch an ``nn`` module with symmetric
  ``padding=(k - 1) * d // 2``, avg pools counting the padding) converted onto with ``model=``; the
  Keras config marks the convs SAME, a rules file's ``[padding]`` the pools (a pool has no weights to
  tie it by); the patched model.py runs ``apply.py``'s rewrites.

``static`` passes ``--input-shape`` (static pads and the input-size guard), ``dynamic`` does not.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from tests.layers.harness import keras_outputs, randomise, run_torch
from tests.util import convert_in_memory, load_source, state_dict
from tf2torch import api

from . import tfref

PATHS = ["generated", "patched"]
MODES = ["static", "dynamic"]
_KERAS = {"conv": "Conv{n}D", "depthwise": "DepthwiseConv{n}D", "separable": "SeparableConv{n}D",
          "max": "MaxPooling{n}D", "avg": "AveragePooling{n}D"}


def joined(values: tuple[int, ...]) -> str:
    """(3, 3) -> '3x3', for ids and names."""
    return "x".join(map(str, values))


@dataclass(frozen=True)
class Case:
    """One branch: a Keras layer with padding='same' (``kind`` a key of ``_KERAS``)."""

    kind: str
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...] | None = None  # None: 1 per dim (pools have none)

    @property
    def name(self) -> str:  # the Keras layer name and the port's attribute: they must match to map
        d = f"_d{joined(self.dilation)}" if self.dilation and any(v > 1 for v in self.dilation) else ""
        return f"{self.kind}_k{joined(self.kernel)}_s{joined(self.stride)}{d}"


@dataclass(frozen=True)
class Grid:
    ndim: int
    channels: int
    cases: tuple[Case, ...]  # distinct branches; a test picks its case's output
    scale: float = 1.0  # inputs: randn (convs) or scale * |randn| (pools: seed 003's positive data)
    filters: int = 3


def _layer(keras, grid: Grid, case: Case):
    cls = getattr(keras.layers, _KERAS[case.kind].format(n=grid.ndim))
    if case.kind in ("max", "avg"):
        return cls(case.kernel, case.stride, padding="same", name=case.name)
    args = () if case.kind == "depthwise" else (grid.filters,)
    return cls(*args, case.kernel, case.stride, padding="same", dilation_rate=case.dilation or 1, name=case.name)


@functools.cache
def keras_file(grid: Grid) -> tuple[Path, object]:
    keras = tfref.keras()
    x = keras.Input((None,) * grid.ndim + (grid.channels,), name="x")
    model = keras.Model(x, [_layer(keras, grid, c)(x) for c in grid.cases])
    randomise(model, seed=len(grid.cases))
    path = Path(tempfile.mkdtemp(prefix="same_grid_")) / "grid.keras"
    model.save(path)
    return path, model


@functools.cache
def inputs(grid: Grid, size: tuple[int, ...]) -> np.ndarray:
    x = tfref.randn(f"grid{grid.ndim}-{grid.channels}-{joined(size)}", 1, *size, grid.channels)
    return grid.scale * np.abs(x) if grid.scale != 1.0 else x


@functools.cache
def keras_out(grid: Grid, size: tuple[int, ...]) -> list[np.ndarray]:
    return keras_outputs(keras_file(grid)[1], [inputs(grid, size)])


def _shape(grid: Grid, size: tuple[int, ...] | None) -> tuple[int, ...] | None:
    return None if size is None else (1, grid.channels, *size)  # the torch model's (N, C, *spatial)


@functools.cache
def generated(grid: Grid, size: tuple[int, ...] | None):
    """(model, conversion) of the Keras grid, static for ``size`` or dynamic (``None``)."""
    return convert_in_memory(keras_file(grid)[0], input_shape=_shape(grid, size))


def _port(grid: Grid) -> str:
    """The user's naive port: symmetric k // 2 padding, torch's default avg divisor (counts padding)."""
    lines = ["import torch.nn as nn", "", "", "class Net(nn.Module):", "    def __init__(self):",
             "        super().__init__()"]
    n, c, f = grid.ndim, grid.channels, grid.filters
    for case in grid.cases:
        pad = tuple((k - 1) * d // 2 for k, d in zip(case.kernel, case.dilation or (1,) * n))
        if case.kind in ("max", "avg"):
            module = f"nn.{case.kind.capitalize()}Pool{n}d({case.kernel}, {case.stride}, padding={tuple(k // 2 for k in case.kernel)})"
        else:
            out, groups = (c, c) if case.kind == "depthwise" else (f, 1)
            module = (f"nn.Conv{n}d({c}, {out}, {case.kernel}, {case.stride}, padding={pad}, "
                      f"dilation={case.dilation or 1}, groups={groups})")
        lines.append(f"        self.{case.name} = {module}")
    lines += ["", "    def forward(self, x):", f"        return [{', '.join(f'self.{c.name}(x)' for c in grid.cases)}]"]
    return "\n".join(lines) + "\n"


@functools.cache
def patched(grid: Grid, size: tuple[int, ...] | None):
    """(patched model, conversion) of the port for the Keras grid, static for ``size`` or dynamic."""
    folder = keras_file(grid)[0].parent
    (folder / "port.py").write_text(_port(grid))
    pools = [c.name for c in grid.cases if c.kind in ("max", "avg")]
    (folder / "rules.toml").write_text("[padding]\n" + "".join(f'"{p}" = "same"\n' for p in pools))
    result = api.convert(keras_file(grid)[0], None, dry_run=True, model=f"{folder / 'port.py'}:Net",
                         rules=folder / "rules.toml", input_shape=_shape(grid, size))
    model = load_source(result.model_source, folder / "model.py")["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    return model.eval(), result


@functools.cache
def outputs(grid: Grid, size: tuple[int, ...], path: str, mode: str) -> list[torch.Tensor]:
    """Every branch's output in Keras's layout (N, *spatial, C), through ``path`` in ``mode``."""
    model, conversion = (generated if path == "generated" else patched)(grid, size if mode == "static" else None)
    x = inputs(grid, size)
    if path == "generated":
        return [t.movedim(1, -1) for t in run_torch(model, conversion, [x])]  # channels-first interface
    with torch.no_grad():
        return [t.movedim(1, -1) for t in model(torch.from_numpy(np.moveaxis(x, -1, 1).copy()))]


def check(grid: Grid, case: Case, size: tuple[int, ...], path: str, mode: str, atol: float,
          soad: float | None = None) -> float:
    """Our output of ``case`` against Keras's: same shape, max abs diff <= atol (and the sum of absolute
    differences <= soad). Returns the max abs diff (printed)."""
    i = grid.cases.index(case)
    ours, expected = outputs(grid, size, path, mode)[i], torch.from_numpy(np.array(keras_out(grid, size)[i]))
    assert ours.shape == expected.shape, f"{case.name}: shape {tuple(ours.shape)} vs Keras {tuple(expected.shape)}"
    err = tfref.max_abs_diff(ours, expected)
    total = (ours.double() - expected.double()).abs().sum().item()
    print(f"{case.name} in {joined(size)} {path} {mode}: max abs diff {err:.2e}, sum abs diff {total:.2e}")
    torch.testing.assert_close(ours, expected, atol=atol, rtol=0)
    if soad is not None:
        assert total <= soad, f"{case.name}: sum of absolute differences {total:.3e} > {soad}"
    return err
