"""A convention's ``combines`` (several original variables into one key), without TensorFlow or transformers:
the combined variable's shape, each part's extent, the lazily read concatenation (against numpy doing the same
steps on the parts), and the refusals (a part missing, parts that do not concatenate, a made-up name that the
checkpoint also holds). That the result is transformers' own is tests/hf/test_hf_original.py's (the 4.57
loader); here the mechanism."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tf2torch.dtypes import by_name
from tf2torch.errors import MappingError
from tf2torch.hf.original import conventions
from tf2torch.hf.original.combine import combine
from tf2torch.map import layouts
from tf2torch.spec import Format, ModelSpec, Variable

IMAGEGPT = next(c for c in conventions() if "imagegpt" in c.model_types)


def _spec(arrays: dict[str, np.ndarray]) -> ModelSpec:
    variables = tuple(Variable(name, by_name(a.dtype.name), a.shape, a.nbytes, loader=lambda a=a: a)
                      for name, a in arrays.items())
    return ModelSpec(Path("model.ckpt.index"), Format.TF1_CHECKPOINT, variables)


def _arrays(heads: int = 2, d: int = 8, dtype: str = "float32", drop: str = "") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    names = {f"model/h{n}/attn/{p}_proj": (heads, d // heads, d) for n in range(2) for p in "qkvc"}
    names |= {"model/wte": (5, d), "model/sos": (d,), "model/wpe": (4, d)}
    return {k: rng.normal(size=s).astype(dtype) for k, s in names.items() if k != drop}


def test_every_layout_a_convention_names_is_in_the_table():
    for convention in conventions():
        kinds = [k for _, k in convention.layouts] + [k for c in convention.combines for _, k in c.parts]
        for kind in kinds:
            layouts.get(kind)  # raises MappingError naming the kind


def test_parts_become_one_variable_read_as_their_concatenation():
    arrays = _arrays()
    spec, combined = combine(_spec(arrays), IMAGEGPT)
    names = [v.name for v in spec.variables]
    assert "model/h0/attn/q_proj" not in names and "model/sos" not in names and "model/wpe" in names
    assert sorted(combined) == ["model/h0/attn/c_attn", "model/h1/attn/c_attn", "model/wte"]
    by_name_ = {v.name: v for v in spec.variables}
    c_attn = by_name_["model/h1/attn/c_attn"]
    assert c_attn.shape == (8, 24) and c_attn.nbytes == 3 * arrays["model/h1/attn/q_proj"].nbytes
    # the same steps numpy takes: merge the heads, transpose, side by side (q, k, v)
    expected = np.concatenate([arrays[f"model/h1/attn/{p}_proj"].reshape(8, 8).T for p in "qkv"], axis=1)
    assert np.array_equal(c_attn.read(), expected)
    assert [(v.name, start, stop) for v, _, start, stop in combined["model/h1/attn/c_attn"].parts] == [
        ("model/h1/attn/q_proj", 0, 8), ("model/h1/attn/k_proj", 8, 16), ("model/h1/attn/v_proj", 16, 24)]
    wte = by_name_["model/wte"]
    assert wte.shape == (6, 8) and np.array_equal(wte.read()[:5], arrays["model/wte"])
    assert np.array_equal(wte.read()[5], arrays["model/sos"])


def test_a_missing_part_is_refused_naming_it():
    with pytest.raises(MappingError, match=r"'model/h1/attn/q_proj'.*lacks model/h1/attn/k_proj"):
        combine(_spec(_arrays(drop="model/h1/attn/k_proj")), IMAGEGPT)


def test_parts_that_do_not_concatenate_are_refused():
    arrays = _arrays()
    arrays["model/sos"] = np.zeros(7, np.float32)  # a start token of another width than the table's rows
    with pytest.raises(MappingError, match=r"'model/wte': its parts model/wte, model/sos do not concatenate"):
        combine(_spec(arrays), IMAGEGPT)
    arrays = _arrays()
    arrays["model/h0/attn/v_proj"] = arrays["model/h0/attn/v_proj"].astype(np.float16)
    with pytest.raises(MappingError, match="dtypes"):
        combine(_spec(arrays), IMAGEGPT)


def test_a_combined_name_the_checkpoint_also_holds_is_refused():
    arrays = _arrays() | {"model/h0/attn/c_attn": np.zeros((8, 24), np.float32)}
    with pytest.raises(MappingError, match="'model/h0/attn/c_attn': .* holds a variable of that name too"):
        combine(_spec(arrays), IMAGEGPT)
