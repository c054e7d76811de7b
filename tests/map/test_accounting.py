"""Every source variable is accounted for exactly once: mapped, skipped with a reason, or unexpected."""

from pathlib import Path

import numpy as np
import pytest

import tf2torch

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _accounted(result, spec):
    sources = [e.source for e in result.report.entries if e.source]
    assert sorted(sources) == sorted(v.name for v in spec.variables)  # each exactly once
    return {e.source: e for e in result.report.entries if e.source}


def test_tf1_adam_global_step_and_ema_are_accounted():
    spec = tf2torch.read(FIXTURES / "tf1/model.ckpt")
    result = tf2torch.api.convert(FIXTURES / "tf1/model.ckpt", None, dry_run=True, weights_only=True)
    by_source = _accounted(result, spec)
    assert by_source["global_step"].status == "skipped" and "global_step" in by_source["global_step"].reason
    assert by_source["conv1/weights/Adam"].status == "skipped" and "Adam" in by_source["conv1/weights/Adam"].reason
    assert by_source["beta1_power"].status == "skipped"
    ema = by_source["conv1/weights/ExponentialMovingAverage"]
    assert ema.status == "skipped" and "--ema" in ema.reason
    assert by_source["extras/vocab"].status == "skipped" and "string" in by_source["extras/vocab"].reason
    assert by_source["conv1/weights"].status == "mapped" and by_source["conv1/weights"].key == "conv1.weight"
    assert by_source["embedding/table"].out_shape == (10, 4)  # partitioned variable, joined


def test_ema_uses_the_shadow_values():
    spec = tf2torch.read(FIXTURES / "tf1/model.ckpt")
    result = tf2torch.api.convert(FIXTURES / "tf1/model.ckpt", None, dry_run=True, ema=True,
                                    weights_only=True)
    by_source = _accounted(result, spec)
    assert "EMA shadow" in by_source["conv1/weights"].reason
    plan = next(p for p in result.plans if p.key == "fc.weight")
    shadow = spec["fc/weights/ExponentialMovingAverage"].read()
    raw = spec["fc/weights"].read()
    assert not np.array_equal(shadow, raw)  # one Adam step apart: the test can tell them apart
    np.testing.assert_array_equal(plan.produce(), shadow.T)


@pytest.mark.parametrize("which", ["keras3", "keras2"])
def test_tf2_checkpoint_optimizer_slots_are_skipped(which):
    path = FIXTURES / f"tf2/{which}/ckpt"
    spec = tf2torch.read(path)
    result = tf2torch.api.convert(path, None, dry_run=True)
    by_source = _accounted(result, spec)
    statuses = {e.status for e in by_source.values()}
    assert statuses <= {"mapped", "skipped"}, by_source
    skipped = [e for e in by_source.values() if e.status == "skipped"]
    assert any("slot" in e.reason.lower() or "optimizer" in e.reason.lower() for e in skipped)


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "default"])
def test_unexpected_and_missing_fail_with_or_without_strict(tmp_path, strict):
    """The contract: a key the forward pass uses with no source, or a variable nothing took, is exit 1
    whether or not --strict is given; the message names them and the fix."""
    from tf2torch.errors import MappingError

    model_file = tmp_path / "tiny.py"
    model_file.write_text("import torch.nn as nn\n\ndef tiny():\n    return nn.Sequential(nn.Linear(3, 2))\n")
    with pytest.raises(MappingError) as info:
        tf2torch.api.convert(FIXTURES / "tf1/model.ckpt", None, dry_run=True, model=f"{model_file}:tiny",
                             strict=strict)
    message = str(info.value)
    print(message)
    assert "nothing took" in message and "with no source that the model uses" in message
    assert "'0.weight' [2, 3]" in message and "--allow-missing PATTERN" in message
    assert "and 7 more (see report.json)" in message  # at most five names per class on the terminal
