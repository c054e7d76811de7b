"""Seed 000: a TF1 WideResNet ported to the usual PyTorch WideResNet diverges from block2 on.

tf2torch maps every checkpoint variable with no rules file, reports the unused `sub_block1` as missing,
and patches the model (TF 'SAME' at stride 2: an explicit bottom/right pad; BN epsilon 1e-3) so its
logits match TensorFlow's. The committed fixture is WRN-16-2; the full WRN-34-10 of the report is
generated with TensorFlow at test time.
"""

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import require_tf
from tests.support.numerics import check
from tests.util import load_source, state_dict
from tf2torch import api

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
WRN_FILE = FIXTURES / "wrn.py"


def _convert(ckpt: Path, factory: str, input_shape=(1, 3, 32, 32)):
    return api.convert(ckpt, None, dry_run=True, model=f"{WRN_FILE}:{factory}", input_shape=input_shape)


def _patched(result):
    model = load_source(result.model_source, FIXTURES / "model.py")["build_model"]()
    missing = model.load_state_dict(state_dict(result.plans), strict=False).missing_keys
    assert all(k.startswith("sub_block1.") for k in missing)
    return model.eval()


def _logits(model, io):
    x = torch.from_numpy(io["input"]).permute(0, 3, 1, 2).contiguous()
    with torch.no_grad():
        return model(x)


def _check(actual, expected, what):
    print(f"{what}: max |logit| {float(np.abs(expected).max()):.2f}")
    check(actual, expected, what)


@pytest.fixture(scope="module")
def wrn16():
    return _convert(FIXTURES / "wrn16_2/model.ckpt", "wrn_16_2"), np.load(FIXTURES / "wrn16_2/io.npz")


def test_every_variable_mapped_without_rules_and_sub_block1_missing(wrn16):
    result, _ = wrn16
    counts = result.report.counts()
    spec = api.read(FIXTURES / "wrn16_2/model.ckpt")
    assert counts["mapped"] == len(spec.variables) and counts["unexpected"] == 0 and counts["mismatched"] == 0
    missing = [e.key for e in result.report.by_status("missing")]
    assert missing and all(k.startswith("sub_block1.") for k in missing)
    # harmless on evidence: one forward pass on the graph's input shape never runs sub_block1
    assert all("never runs in forward() (on input [1, 3, 32, 32])" in e.allowed
               for e in result.report.by_status("missing"))
    mapped = {e.source: e.key for e in result.report.by_status("mapped")}
    assert mapped["block2.layer.0/shortcut_conv/DW"] == "block2.layer.0.convShortcut.weight"
    assert mapped["conv1.weight/DW"] == "conv1.weight"
    assert mapped["bn1/BatchNorm/moving_variance"] == "bn1.running_var"


def test_rewrites_are_the_strided_convs_and_bn_epsilon(wrn16):
    result, _ = wrn16
    pads = {r["module"]: r["args"] for r in result.report.rewrites if r["kind"] == "pad"}
    assert pads == {"block2.layer.0.conv1": [[0, 1, 0, 1], 0.0], "block3.layer.0.conv1": [[0, 1, 0, 1], 0.0]}
    eps = {r["args"] for r in result.report.rewrites if r["kind"] == "eps"}
    assert eps == {0.001}


@pytest.mark.parametrize("input_shape", [(1, 3, 32, 32), None], ids=["static", "dynamic"])
def test_patched_wrn16_matches_tensorflow_logits(input_shape):
    io = np.load(FIXTURES / "wrn16_2/io.npz")
    model = _patched(_convert(FIXTURES / "wrn16_2/model.ckpt", "wrn_16_2", input_shape))
    _check(_logits(model, io), io["output"], f"WRN-16-2 patched ({'static' if input_shape else 'dynamic'})")


def test_plain_symmetric_padding_does_not_match(wrn16):
    """The report's bug, reproduced: the same weights in the unpatched model give other logits."""
    result, io = wrn16
    namespace = load_source(WRN_FILE.read_text(), WRN_FILE)
    model = namespace["wrn_16_2"]()
    model.load_state_dict(state_dict(result.plans), strict=False)
    diff = (_logits(model.eval(), io) - torch.from_numpy(io["output"])).abs().max().item()
    print(f"unpatched WRN-16-2: max abs diff {diff:.2e}")
    assert diff > 1e-2


@pytest.mark.parametrize("input_shape", [(1, 3, 32, 32), None], ids=["static", "dynamic"])
def test_patched_model_exports(input_shape):
    io = np.load(FIXTURES / "wrn16_2/io.npz")
    model = _patched(_convert(FIXTURES / "wrn16_2/model.ckpt", "wrn_16_2", input_shape))
    x = torch.from_numpy(io["input"]).permute(0, 3, 1, 2).contiguous()
    exported = torch.export.export(model, (x,))
    with torch.no_grad():
        torch.testing.assert_close(exported.module()(x), model(x), rtol=0, atol=1e-6)


@pytest.mark.slow
def test_wrn_34_10_of_the_report(tmp_path):
    """The report's full model (46M parameters), built by TF at test time (not committed)."""
    require_tf()
    from fixtures.make_fixtures import make_wrn

    make_wrn(tmp_path, depth=34, widen=10, seed=34)
    io = np.load(tmp_path / "io.npz")
    result = _convert(tmp_path / "model.ckpt", "WideResNet")
    assert result.report.counts()["unexpected"] == 0
    assert all(e.key.startswith("sub_block1.") for e in result.report.by_status("missing"))
    _check(_logits(_patched(result), io), io["output"], "WRN-34-10 patched")
