"""The inputs both frameworks get: shapes, layouts, seeded random data or the user's arrays.

Shapes and arrays given by the user (``--input-shape``, ``--inputs``) are in the *PyTorch model's*
layout; TensorFlow gets the same values in its own layout. A "channels_first" input of rank >= 3 is
(N, C, ...spatial) in PyTorch and (N, ...spatial, C) in TensorFlow; a "keras" input is the same in both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import interface
from ..errors import FormatError, UsageError
from ..interface import CHANNELS_FIRST, KERAS

AUTO = "auto"
DEFAULT_BATCH = 2  # two samples: a conversion that mixes the batch axis into the features is caught


@dataclass(frozen=True)
class InputSpec:
    name: str  # TF name: Keras input layer, placeholder, signature argument
    tf_shape: tuple[int | None, ...]  # with the batch axis, in TF's layout; None where unknown
    layout: str  # CHANNELS_FIRST | KERAS | AUTO (the PyTorch side is unknown: decided from shapes)
    dtype: str = "float32"
    aliases: tuple[str, ...] = ()  # other names an .npz may use (the PyTorch forward argument)


@dataclass
class Inputs:
    tf: list[np.ndarray]
    torch: list[np.ndarray]
    layouts: list[str]  # resolved: CHANNELS_FIRST or KERAS
    described: list[dict[str, Any]]


def to_tf(array: np.ndarray, layout: str) -> np.ndarray:
    """An array in the PyTorch model's layout as TF takes it (tf2torch.interface)."""
    if not interface.moves_axes(layout, array.ndim):
        return array
    return np.ascontiguousarray(array.transpose(interface.to_tf_axes(array.ndim, layout)))


def tf_to_torch_shape(shape: tuple, layout: str) -> tuple:
    return interface.to_torch_shape(shape, layout)


def _fits(shape: tuple, tf_shape: tuple) -> bool:
    return len(shape) == len(tf_shape) and all(t is None or t == s for s, t in zip(shape, tf_shape))


def resolve_layout(spec: InputSpec, torch_shape: tuple[int, ...] | None) -> str:
    """AUTO (no report says: a user's own model, a TF1 graph): what the given shape fits, else the rule
    for an input whose first consumer is unknown (images are channels-first)."""
    if spec.layout != AUTO:
        return spec.layout
    if torch_shape is not None and len(torch_shape) >= 3:
        moved = interface.to_tf_shape(torch_shape, CHANNELS_FIRST)
        as_is, cf = _fits(torch_shape, spec.tf_shape), _fits(moved, spec.tf_shape)
        if as_is != cf:
            return KERAS if as_is else CHANNELS_FIRST
    return interface.layout_name(interface.input_channels_first(len(spec.tf_shape), None, channels_last=False))


def make_inputs(specs: Sequence[InputSpec], input_shape: tuple[int, ...] | None, given: Any, seed: int) -> Inputs:
    """Both frameworks' inputs. ``given``: None (seeded random), an .npy/.npz path, an array, a name ->
    array mapping or a sequence of arrays, all in the PyTorch layout."""
    # one shape for several inputs when it fits each (a text model's token ids, padding mask, segment ids)
    if input_shape is not None and len(specs) != 1 and not all(
            _fits(tuple(input_shape), s.tf_shape) and len(s.tf_shape) < 3 for s in specs):
        raise UsageError(f"--input-shape applies to models with one input, or inputs of one rank-1 or rank-2 "
                         f"shape; this one has {len(specs)} ({', '.join(s.name for s in specs)}) that it does not "
                         "fit: pass --inputs FILE.npz instead")
    if input_shape is not None and given is not None:
        raise UsageError("pass --input-shape or --inputs, not both: the arrays have their own shapes")
    arrays = _given_arrays(specs, given) if given is not None else None
    rng = np.random.default_rng(seed)
    out = Inputs([], [], [], [])
    for i, spec in enumerate(specs):
        if arrays is not None:
            torch_array = arrays[i]
            layout = resolve_layout(spec, tuple(torch_array.shape))
            origin = "given"
        else:
            torch_shape = input_shape if input_shape is not None else None
            layout = resolve_layout(spec, torch_shape)
            if torch_shape is None:
                torch_shape = _default_shape(spec, layout)
            torch_array = _random(rng, torch_shape, spec.dtype)
            origin = f"random (seed {seed})"
        tf_array = to_tf(torch_array, layout)
        if not _fits(tuple(tf_array.shape), spec.tf_shape):
            raise UsageError(f"input {spec.name!r}: shape {tuple(torch_array.shape)} (PyTorch layout, {layout}) is "
                             f"{tuple(tf_array.shape)} in TF's layout, but the TF model takes "
                             f"{_show(spec.tf_shape)}; give the shape in the PyTorch model's layout")
        out.tf.append(tf_array)
        out.torch.append(torch_array)
        out.layouts.append(layout)
        out.described.append({"name": spec.name, "shape": list(torch_array.shape), "tf_shape": list(tf_array.shape),
                              "layout": layout, "dtype": str(torch_array.dtype), "origin": origin})
    return out


def _default_shape(spec: InputSpec, layout: str) -> tuple[int, ...]:
    tf_shape = (DEFAULT_BATCH if spec.tf_shape[0] is None else spec.tf_shape[0], *spec.tf_shape[1:])
    if any(d is None for d in tf_shape):
        raise UsageError(f"input {spec.name!r}: the TF model takes {_show(spec.tf_shape)} (sizes unknown); pass "
                         "--input-shape in the PyTorch model's layout, e.g. 1,3,224,224")
    return tf_to_torch_shape(tuple(int(d) for d in tf_shape), layout)


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    kind = np.dtype(dtype).kind
    if kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if kind == "b":
        return rng.random(shape) < 0.5
    if np.dtype(dtype) == np.int8:  # a full-integer TFLite model's quantized input: its whole range
        return rng.integers(-128, 128, shape).astype(dtype)
    if kind in "iu":  # token ids, class ids: small values are valid for any vocabulary
        return rng.integers(0, 2, shape).astype(dtype)
    raise UsageError(f"cannot make random inputs of dtype {dtype}; pass --inputs FILE.npz")


def _given_arrays(specs: Sequence[InputSpec], given: Any) -> list[np.ndarray]:
    if isinstance(given, (str, Path)):
        given = _load(Path(given), specs)
    if isinstance(given, np.ndarray):
        given = [given]
    if isinstance(given, Mapping):
        if len(given) == 1 and len(specs) == 1:
            given = list(given.values())
        else:
            found = []
            for spec in specs:
                name = next((n for n in (spec.name, *spec.aliases) if n in given), None)
                if name is None:
                    raise UsageError(f"inputs: no array named {spec.name!r} (found {', '.join(sorted(given))}); "
                                     f"name the arrays after the model inputs: {', '.join(s.name for s in specs)}")
                found.append(given[name])
            given = found
    arrays = [np.asarray(a) for a in given]
    if len(arrays) != len(specs):
        raise UsageError(f"inputs: {len(arrays)} arrays for a model with {len(specs)} inputs "
                         f"({', '.join(s.name for s in specs)})")
    return [a.astype(spec.dtype, copy=False) if a.dtype.kind == np.dtype(spec.dtype).kind else _cast(a, spec)
            for a, spec in zip(arrays, specs)]


def _cast(array: np.ndarray, spec: InputSpec) -> np.ndarray:
    if np.dtype(spec.dtype).kind == "f" and array.dtype.kind in "iub":
        return array.astype(spec.dtype)
    raise UsageError(f"input {spec.name!r}: an array of {array.dtype}, but the model takes {spec.dtype}")


def _load(path: Path, specs: Sequence[InputSpec]) -> Any:
    if not path.is_file():
        raise UsageError(f"--inputs {path}: no such file")
    try:
        data = np.load(path, allow_pickle=False)  # never unpickle: object arrays are refused
    except (ValueError, OSError) as exc:
        raise FormatError(f"--inputs {path}: not a .npy/.npz of numeric arrays ({exc})") from None
    if isinstance(data, np.ndarray):
        return data
    with data:
        return {name: data[name] for name in data.files}


def _show(shape: tuple) -> str:
    return "(" + ", ".join("N" if i == 0 and d is None else "?" if d is None else str(d)
                           for i, d in enumerate(shape)) + ")"
