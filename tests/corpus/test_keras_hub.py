"""keras-hub models (issue: a ``Backbone.save()`` file used to give exit 0 and a bare state_dict with no
model.py): until they are generated, converting one is refused by name, never silently bare."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from tests.conftest import require_package
from tf2torch.cli import EXIT_ERROR, main


@pytest.fixture(scope="module")
def bert_backbone(tmp_path_factory):
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras_hub = require_package("keras_hub")
    path = tmp_path_factory.mktemp("keras_hub") / "bert.keras"
    keras_hub.models.BertBackbone(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
                                  max_sequence_length=16).save(path)
    return path


def test_a_keras_hub_backbone_is_refused_by_name_not_converted_bare(bert_backbone, tmp_path):
    result = CliRunner().invoke(main, ["convert", str(bert_backbone), "-o", str(tmp_path / "out")])
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR
    assert "'keras_hub>BertBackbone' is a keras-hub model" in result.stderr and "--weights-only" in result.stderr
    assert not (tmp_path / "out").exists()


def test_weights_only_writes_the_bare_state_dict_on_request(bert_backbone, tmp_path):
    result = CliRunner().invoke(main, ["convert", str(bert_backbone), "-o", str(tmp_path / "out"), "--weights-only"])
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["model.safetensors", "report.json"]
