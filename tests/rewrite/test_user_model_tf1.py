"""A TF1 checkpoint (+ .meta) onto a user's own PyTorch model: SAME from the graph for convs,
--tf-padding same for the pool the graph cannot tie to a module, the Dense after an NHWC Flatten via
the rules file, BN epsilon from the graph. Compared with the logits TF computed for the fixture."""

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.util import load_source, state_dict, to_torch_layout
from tf2torch import api

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NET = Path(__file__).with_name("tf1_user_net.py")


@pytest.fixture
def rules(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text('[layouts]\n"fc.weight" = "dense_after_flatten:3,3,16"\n')
    return path


def _run(result):
    model = load_source(result.model_source, NET.with_name("model.py"))["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    io = np.load(FIXTURES / "tf1/io.npz")
    with torch.no_grad():
        out = model.eval()(to_torch_layout(io["input"]))
    return out, torch.from_numpy(io["output"])


@pytest.mark.parametrize("input_shape", [(1, 3, 12, 12), None], ids=["static", "dynamic"])
def test_tf1_checkpoint_onto_user_model(rules, input_shape):
    result = api.convert(FIXTURES / "tf1/model.ckpt", None, dry_run=True, model=f"{NET}:Net", rules=rules,
                         tf_padding="same", input_shape=input_shape)
    assert result.report.counts()["missing"] == 0
    # variables the user's model has no place for are reported, not dropped silently
    assert {e.source for e in result.report.by_status("unexpected")} == {"embedding/table", "extras/bf16",
                                                                          "extras/half"}
    kinds = {r["module"]: r["kind"] for r in result.report.rewrites}
    assert kinds["bn1"] == "eps" and "conv1" in kinds and "pool" in kinds
    out, expected = _run(result)
    print(f"TF1 checkpoint onto user model ({'static' if input_shape else 'dynamic'}): "
          f"max abs diff {(out - expected).abs().max().item():.2e}")
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_without_the_flatten_rule_the_dense_is_wrong(rules):
    """The layout rule matters: with the plain Dense transpose the NCHW flatten reads other features."""
    result = api.convert(FIXTURES / "tf1/model.ckpt", None, dry_run=True, model=f"{NET}:Net",
                         tf_padding="same", input_shape=(1, 3, 12, 12))
    out, expected = _run(result)
    diff = (out - expected).abs().max().item()
    print(f"without dense_after_flatten: max abs diff {diff:.2e}")
    assert diff > 1e-2
