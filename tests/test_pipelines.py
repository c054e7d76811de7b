"""The modes as pipelines: which one converts a source, the options object, the report on the error,
and the one copy rule every mode's accounting uses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import tf2torch
from tf2torch import dtypes, pipelines
from tf2torch.errors import MappingError, UsageError
from tf2torch.map.select import copies_of, drop_copies
from tf2torch.options import ConvertOptions
from tf2torch.spec import Variable

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
F32 = dtypes.by_name("float32")


def _var(name: str, value: float, tf_name: str = "") -> Variable:
    data = np.full((2, 3), value, "f4")
    return Variable(name, F32, (2, 3), data.nbytes, loader=lambda: data, tf_name=tf_name)


def test_each_source_goes_to_its_mode():
    keras = tf2torch.read(FIXTURES / "keras3/cnn.keras")
    ckpt = tf2torch.read(FIXTURES / "tf1/model.ckpt")  # with its .meta: a TF graph
    assert pipelines.pick(keras, ConvertOptions()) == "keras"
    assert pipelines.pick(keras, ConvertOptions(model="x.py:f")) == "onto_model"
    assert pipelines.pick(ckpt, ConvertOptions()) == ("tf_graph" if ckpt.tf_graph is not None else "state_dict")
    assert pipelines.pick(ckpt, ConvertOptions(weights_only=True)) == "state_dict"
    assert [name for name, _ in pipelines.MODES][-1] == "state_dict"  # the mode of last resort


def test_options_are_checked_and_keywords_build_the_same_object():
    with pytest.raises(UsageError, match="weights format"):
        ConvertOptions(weights_format="npz")
    with pytest.raises(UsageError, match="--dtype int8"):
        ConvertOptions(dtype="int8")
    with pytest.raises(TypeError, match="bogus"):
        tf2torch.convert(FIXTURES / "tf1/model.ckpt", None, bogus=True)
    base = ConvertOptions(input_shape=[1, 3, 8, 8], allow_missing=["a"])  # lists stored as tuples
    assert base.input_shape == (1, 3, 8, 8) and base.allow_missing == ("a",)
    assert ConvertOptions.build(base, dry_run=True) == replace(base, dry_run=True)


def test_a_failed_contract_carries_its_report(tmp_path):
    model_file = tmp_path / "tiny.py"
    model_file.write_text("import torch.nn as nn\n\ndef tiny():\n    return nn.Sequential(nn.Linear(3, 2))\n")
    with pytest.raises(MappingError) as info:
        tf2torch.convert(FIXTURES / "tf1/model.ckpt", None, dry_run=True, model=f"{model_file}:tiny")
    report = info.value.report
    assert report is not None and report.mode == "model" and report.by_status("missing")
    assert MappingError("no report").report is None


def test_one_copy_rule_by_tf_name_or_by_first_scope():
    used = [_var("variables/0", 1.0, tf_name="dense/kernel"), _var("shared/emb", 2.0)]
    unused = [_var("_all_variables/3", 1.0, tf_name="dense/kernel"),  # the same variable tracked twice
              _var("encoder/emb", 2.0),  # the same tensor under another first scope
              _var("decoder/emb", 5.0)]  # the same name, other values: not a copy
    assert copies_of(unused, used) == {"_all_variables/3": "variables/0", "encoder/emb": "shared/emb"}
    kept, dropped = drop_copies([*unused, *used])  # before matching: the first in sorted order stays
    assert dropped == {"variables/0": "_all_variables/3", "shared/emb": "encoder/emb"}
    assert {v.name for v in kept} == {"_all_variables/3", "encoder/emb", "decoder/emb"}


def test_a_transformers_repo_is_a_config_without_a_savedmodel_or_checkpoint_beside_it(tmp_path) -> None:
    from tf2torch import hf

    (tmp_path / "config.json").write_text("{}")
    assert hf.is_repo(tmp_path)
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "ckpt-1"\n')  # a TF checkpoint directory
    assert not hf.is_repo(tmp_path)
    (tmp_path / "checkpoint").unlink()
    (tmp_path / "saved_model.pb").write_bytes(b"")
    assert not hf.is_repo(tmp_path)
