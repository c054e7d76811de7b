"""TF2 object checkpoints and SavedModels of Keras models become whole PyTorch models.

The architecture comes from --config (model.to_json()) or keras_metadata.pb; weights are tied to
layers through the object graph, including Keras 3 checkpoints that key trainable weights under the
optimizer. Outputs are compared with what Keras computed when the fixture was written.
"""

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.numerics import check, float64_drift
from tests.util import convert_in_memory, to_torch_layout
from tf2torch.errors import UsageError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize("source, config, io", [
    ("tf2/keras3/ckpt", "tf2/keras3/model.json", "tf2/keras3/io.npz"),
    ("tf2/keras2/ckpt", "tf2/keras2/model.json", "tf2/keras2/io.npz"),
    ("savedmodel/keras3", "tf2/keras3/model.json", "savedmodel/io_keras3.npz"),
    ("savedmodel/keras2", None, "savedmodel/io_keras2.npz"),
], ids=["tf2-ckpt-keras3", "tf2-ckpt-keras2", "savedmodel-keras3-config", "savedmodel-keras2-metadata"])
def test_object_checkpoints_convert_to_matching_models(source, config, io):
    options = {"config": FIXTURES / config} if config else {}
    model, result = convert_in_memory(FIXTURES / source, **options)
    counts = result.report.counts()
    assert counts["mapped"] == 12 and counts["unexpected"] == 0 and counts["missing"] == 0
    data = np.load(FIXTURES / io)
    feed = [to_torch_layout(data["input"])]
    with torch.no_grad():
        out = model(*feed)
    expected = torch.from_numpy(data["output"])
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    check(out, expected, source, float64_drift(model, feed))  # (3.8e-6 absolute on the Keras 2 SavedModel)


def test_optimizer_slots_are_skipped_not_mapped():
    _, result = convert_in_memory(FIXTURES / "tf2/keras3/ckpt", config=FIXTURES / "tf2/keras3/model.json")
    skipped = result.report.by_status("skipped")
    assert len(skipped) == 23 and all(e.source.startswith(("optimizer/", "_CHECKPOINTABLE")) for e in skipped)


def test_config_of_another_model_is_refused(tmp_path):
    other = tmp_path / "other.json"
    other.write_text((FIXTURES / "tf2/keras3/model.json").read_text().replace('"conv1"', '"c1"')
                     .replace('"bn1"', '"b1"').replace('"dw1"', '"d1"').replace('"conv2"', '"c2"')
                     .replace('"logits"', '"l1"'))
    with pytest.raises(UsageError) as info:
        convert_in_memory(FIXTURES / "tf2/keras3/ckpt", config=other)
    assert "no weight" in str(info.value)
