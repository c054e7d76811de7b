"""``tf2torch verify`` on keras-hub files: a text Task's three int inputs (token ids, padding mask,
segment ids) take one ``--input-shape``; its backbone, a nested model returning a dict, is compared
through the layers that read it, not flagged as a shape mismatch; inputs of different ranks still need
``--inputs``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.corpus.keras_hub_cases import CASES
from tests.corpus.test_keras_hub import keras_hub, randomise
from tf2torch.cli import main


@pytest.fixture(scope="module")
def bert_classifier(tmp_path_factory):
    hub = keras_hub()
    backbone_class, kwargs = CASES["bert"]
    task = hub.models.BertTextClassifier(backbone=getattr(hub.models, backbone_class)(**kwargs), num_classes=3,
                                         preprocessor=None)
    randomise(task, seed=1)
    root = tmp_path_factory.mktemp("bert_classifier")
    task.save(root / "m.keras")
    result = CliRunner().invoke(main, ["convert", str(root / "m.keras"), "-o", str(root / "out")])
    assert result.exit_code == 0, result.stderr
    return root, task.backbone.name  # (Keras numbers unnamed models per process: bert_backbone_1 …)


def test_one_input_shape_feeds_a_text_tasks_inputs(bert_classifier):
    root, backbone_name = bert_classifier
    result = CliRunner().invoke(main, ["verify", str(root / "m.keras"), str(root / "out"),
                                       "--input-shape", "2,7", "--json"])
    assert result.exit_code == 0, result.output + result.stderr
    verdict = json.loads(result.output)
    outputs = [row for row in verdict["rows"] if row["kind"] != "layer"]
    print(verdict["verdict"], verdict["counts"], [(row["name"], row["max_abs"]) for row in outputs])
    assert verdict["ok"] and verdict["verdict"] == "match" and verdict["counts"]["shape"] == 0
    assert sorted(i["shape"] for i in verdict["inputs"]) == [[2, 7]] * 3
    backbone = next(row for row in verdict["rows"] if row["name"] == backbone_name)
    assert backbone["status"] == "skipped" and "several outputs" in backbone["note"]


def test_one_input_shape_for_inputs_of_different_ranks_is_refused(tmp_path):
    hub = keras_hub()
    backbone_class, kwargs = CASES["whisper"]
    path = tmp_path / "whisper.keras"
    getattr(hub.models, backbone_class)(**kwargs).save(path)
    assert CliRunner().invoke(main, ["convert", str(path), "-o", str(tmp_path / "out")]).exit_code == 0
    result = CliRunner().invoke(main, ["verify", str(path), str(tmp_path / "out"), "--input-shape", "2,7"])
    print(result.stderr)
    assert result.exit_code == 2 and "--inputs FILE.npz" in result.stderr
