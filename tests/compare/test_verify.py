"""``tf2torch verify``: correct conversions match (exit 0); broken ones exit 3 and name the layer where
they start to diverge; JSON, report file, plot; TensorFlow or matplotlib missing is one line, exit 1."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.compare import breakers
from tests.compare.conftest import KERAS2, KERAS3, ROOT, WRN
from tests.conftest import require_tf
from tf2torch.cli import main
from tf2torch.compare import verify

ATOL = 1e-4


def cli(*args: object):
    return CliRunner().invoke(main, ["verify", *map(str, args)])


# -- correct conversions --------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "source"), [("keras3", KERAS3), ("keras2", KERAS2)], ids=["keras3", "keras2-h5"])
def test_keras_conversion_matches(outputs, name, source):
    require_tf()
    result = cli(source, outputs[name])
    assert result.exit_code == 0, result.output
    assert "MATCH" in result.output
    for layer in ("conv1", "bn1", "pool1", "dw1", "conv2", "logits", "output_0"):
        assert f"\n  {layer} " in result.output


def test_keras_rows_in_network_order_with_small_diffs(outputs):
    require_tf()
    result = verify(KERAS3, outputs["keras3"])
    assert result.ok and result.first_diverging is None
    assert [r.name for r in result.rows] == ["conv1", "bn1", "pool1", "dw1", "conv2", "logits", "output_0"]
    assert [r.torch for r in result.rows][:2] == ["conv1_act", "bn1"]  # conv1's output is after its ReLU
    assert all(r.status == "ok" and r.max_abs < 1e-5 for r in result.rows)
    assert result.rows[0].shape == (2, 8, 8, 8)  # TF's layout: PyTorch's NCHW moved back


def test_wrn_meta_graph_matches(outputs):
    """Seed 000 through the TF1 path: placeholder 'input' (NHWC), output 'fc/logits', a module per op."""
    require_tf()
    result = cli(WRN, outputs["wrn"], "--json")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["block2.layer.0.conv1"]["tf"] == "block2.layer.0/conv1/Conv2D:0"
    assert rows["block2.layer.0.bn1"]["tf"] == "block2.layer.0/bn1/BatchNorm/FusedBatchNormV3:0"
    assert rows["fc"]["tf"] == "fc/xw_plus_b:0"  # the BiasAdd after the MatMul: the Linear includes its bias
    assert rows["output_0"]["tf"] == "fc/logits:0"
    assert all(r["status"] == "ok" for r in rows.values())
    assert rows["output_0"]["max_abs"] < 1e-5
    assert rows["block2.layer.0.conv1"]["shape"] == [2, 16, 16, 64]  # NCHW hook output moved to TF's NHWC
    assert not any(name.startswith("sub_block1") for name in rows)  # unused in forward(), never mapped


def test_savedmodel_signature_matches(tmp_path):
    """A SavedModel (tf_keras, with keras_metadata.pb) is compared on its serving signature's outputs."""
    require_tf()
    from tf2torch import api

    source = ROOT / "fixtures" / "savedmodel" / "keras2"
    api.convert(source, tmp_path / "out")
    result = verify(source, tmp_path / "out")
    assert result.ok and result.source_kind == "savedmodel"
    assert [r.kind for r in result.rows] == ["output"]


def test_given_inputs_in_pytorch_layout(outputs, tmp_path):
    require_tf()
    io = np.load(ROOT / "fixtures" / "keras3" / "io.npz")
    np.save(tmp_path / "x.npy", np.moveaxis(io["input"], -1, 1))  # NHWC -> the model's NCHW
    result = verify(KERAS3, outputs["keras3"], inputs=tmp_path / "x.npy")
    assert result.ok and result.inputs[0]["origin"] == "given"
    assert result.inputs[0]["tf_shape"] == list(io["input"].shape)


@pytest.mark.parametrize(("tf_padding", "rules", "ok"), [
    ("same", "", True),  # SAME from --tf-padding (and the Keras config)
    (None, "", True),  # SAME from the Keras config alone
    (None, '[padding]\n"conv1" = "valid"\n', False),  # the user's padding=1 kept as written: diverges
], ids=["tf-padding-same", "keras-config", "as-written"])
def test_user_model_from_keras(tmp_path, tf_padding, rules, ok):
    """--model with a Keras source: a Keras layer pairs with the module its weights went to; the
    layer's fused ReLU is applied to the module's output before comparing."""
    require_tf()
    from tf2torch import api

    user = Path(__file__).with_name("user_cnn.py")
    rules_file = None
    if rules:
        rules_file = tmp_path / "rules.toml"
        rules_file.write_text(rules)
    api.convert(KERAS2, tmp_path / "out", model=f"{user}:SmallCnn", input_shape=(2, 3, 16, 16), tf_padding=tf_padding,
                rules=rules_file)
    result = verify(KERAS2, tmp_path / "out")
    assert result.ok is ok and result.mode == "model"
    assert [r.name for r in result.rows] == ["conv1", "bn1", "dw1", "conv2", "logits", "output_0"]
    assert "'relu'" in result.rows[0].note
    assert result.first_diverging == (None if ok else "conv1")


# -- broken conversions ---------------------------------------------------------------------------


def _wrn_pad(out: Path) -> None:
    breakers.drop_rewrite(out, "pad", "block2.layer.0.conv1")


def _wrn_eps(out: Path) -> None:
    breakers.drop_rewrite(out, "eps", "block2.layer.1.bn1")


BROKEN = [
    # (conversion, how it is broken, the source, the first diverging layer it must name)
    ("keras3", lambda out: breakers.symmetric_padding(out, "conv1"), KERAS3, "conv1"),
    ("keras3", lambda out: breakers.bn_epsilon(out, "bn1", 1e-5), KERAS3, "bn1"),
    ("keras2", lambda out: breakers.symmetric_padding(out, "conv2", (1, 0)), KERAS2, "conv2"),
    ("wrn", _wrn_pad, WRN, "block2.layer.0.conv1"),
    ("wrn", _wrn_eps, WRN, "block2.layer.1.bn1"),
    ("square", lambda out: breakers.transpose_weight(out, "square.weight"), None, "square"),
]
BROKEN_IDS = ["keras3-symmetric-pad", "keras3-bn-eps", "keras2-symmetric-pad-conv2", "wrn-symmetric-pad",
              "wrn-bn-eps", "transposed-square-dense"]


@pytest.mark.parametrize(("name", "brk", "source", "layer"), BROKEN, ids=BROKEN_IDS)
def test_broken_conversion_names_first_diverging_layer(outputs, tmp_path, name, brk, source, layer):
    require_tf()
    out = breakers.copy_outdir(outputs[name], tmp_path / "broken")
    brk(out)
    source = source or outputs.source_of(name)
    result = cli(source, out, "--json")
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    assert data["verdict"] == "mismatch" and data["ok"] is False
    assert data["first_diverging"] == layer
    statuses = [(r["name"], r["status"]) for r in data["rows"] if r["kind"] == "layer"]
    first = [n for n, _ in statuses].index(layer)
    assert all(s == "ok" for _, s in statuses[:first]), statuses  # everything before it still matches


# -- tolerance semantics --------------------------------------------------------------------------


@pytest.mark.parametrize(("actual", "expected", "ok", "max_abs", "max_rel"), [
    ([1.0, 2.0], [1.0, 2.0], True, 0.0, 0.0),
    ([1.0 + 1.5e-4, 0.0], [1.0, 0.0], True, 1.5e-4, 1.5e-4),  # within atol + rtol * |b| = 2e-4
    ([1.0 + 2.5e-4, 0.0], [1.0, 0.0], False, 2.5e-4, 2.5e-4),
    ([0.0, 5e-5], [0.0, 0.0], True, 5e-5, 0.0),  # rel over nonzero references only
    ([np.nan, 1.0], [np.nan, 1.0], True, 0.0, 0.0),  # NaN on both sides matches
    ([np.nan, 1.0], [0.0, 1.0], False, np.inf, 0.0),
    ([np.inf, 1.0], [np.inf, 1.0], True, 0.0, 0.0),
], ids=["equal", "within-atol-rtol", "beyond", "zero-reference", "nan-both", "nan-one", "inf-both"])
def test_stats(actual, expected, ok, max_abs, max_rel):
    from tf2torch.compare.compare import stats

    s = stats(np.array(actual), np.array(expected), atol=1e-4, rtol=1e-4)
    assert s.ok is ok
    assert s.max_abs == pytest.approx(max_abs, rel=1e-6)
    assert s.max_rel == pytest.approx(max_rel, rel=1e-6)


def test_integer_rows_compare_steps_with_atol_only():
    """Integer tensors on both sides (quantized codes) match only within atol: rtol=1e-4 of an int16 code near
    32767 would pass three steps. A float row keeps atol + rtol * |b|; a float side makes the row float."""
    from tf2torch.compare.compare import compare_row

    ref = np.array([30000, -5, 7], np.int16)
    off = ref + np.array([3, 0, 0], np.int16)
    row = compare_row("CONV_2D c", "layer", "c", "c", off, ref, atol=1e-4, rtol=1e-4)
    print(row.status, row.max_abs, row.note)
    assert row.status == "diverged" and row.integer and row.max_abs == 3 and "steps" in row.note
    assert row.tolerance(1e-4, 1e-4) == pytest.approx(1e-4)
    assert compare_row("c", "layer", "c", "c", off, ref, atol=3, rtol=0).status == "ok"  # --atol 3: three steps
    assert compare_row("c", "layer", "c", "c", ref.copy(), ref, atol=1e-4, rtol=1e-4).status == "ok"
    floats = compare_row("c", "layer", "c", "c", off.astype(np.float32), ref.astype(np.float32), 1e-4, 1e-4)
    assert floats.status == "ok" and not floats.integer  # 3 <= 1e-4 + 1e-4 * 30000: float semantics unchanged


# -- output formats -------------------------------------------------------------------------------


def test_json_has_rows_and_verdict(outputs):
    require_tf()
    result = cli(KERAS3, outputs["keras3"], "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["verdict"] == "match" and data["ok"] is True and data["first_diverging"] is None
    assert data["atol"] == ATOL and data["inputs"][0]["shape"] == [2, 3, 16, 16]
    row = data["rows"][0]
    assert set(row) >= {"name", "kind", "tf", "torch", "shape", "max_abs", "max_rel", "status"}
    assert row["name"] == "conv1" and row["shape"] == [2, 8, 8, 8] and row["status"] == "ok"
    assert data["rows"][-1]["kind"] == "output"


def test_report_file_and_plot(outputs, tmp_path):
    require_tf()
    out = breakers.copy_outdir(outputs["keras3"], tmp_path / "broken")
    breakers.bn_epsilon(out, "bn1", 1e-5)
    report, png = tmp_path / "verdict.json", tmp_path / "layers.png"
    result = cli(KERAS3, out, "--report", report, "--plot", png, "-q")
    assert result.exit_code == 3
    assert result.stdout == ""  # a mismatch is printed even with -q, on stderr
    assert "MISMATCH: first diverging layer: 'bn1': max abs" in result.stderr
    assert "  bn1       (2, 8, 8, 8)" in result.stderr and "DIVERGED  <- first diverging" in result.stderr
    assert json.loads(report.read_text())["first_diverging"] == "bn1"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_report_and_plot_never_replace_a_file_without_force(outputs, tmp_path):
    require_tf()
    report, png = tmp_path / "verdict.json", tmp_path / "layers.png"
    report.write_text("an earlier verdict")
    result = cli(KERAS3, outputs["keras3"], "--report", report, "--plot", png)
    assert result.exit_code == 1
    assert f"tf2torch: error: {report}: exists; pass --force to replace it" in result.stderr
    assert report.read_text() == "an earlier verdict" and not png.exists()  # refused before TF ran
    result = cli(KERAS3, outputs["keras3"], "--report", report, "--plot", png, "--force", "-q")
    assert result.exit_code == 0, result.stderr
    assert json.loads(report.read_text())["ok"] is True and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["layers.png", "verdict.json"]  # no staging left


# -- errors ---------------------------------------------------------------------------------------


BLOCK = """
import sys

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == {module!r}:
            raise ImportError("No module named {module!r}")

sys.meta_path.insert(0, Block())
sys.argv = ["tf2torch", "verify", *{args!r}]
from tf2torch.cli import run
run()
"""


@pytest.mark.parametrize(("module", "extra", "args"), [
    ("tensorflow", "tf2torch[tf]", []),
    ("matplotlib", "tf2torch[plot]", ["--plot", "x.png"]),
], ids=["no-tensorflow", "no-matplotlib"])
def test_missing_extra_is_one_line(outputs, tmp_path, module, extra, args):
    code = textwrap.dedent(BLOCK).format(module=module, args=[str(KERAS3), str(outputs["keras3"]), *args])
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("tf2torch:")]
    assert len(lines) == 1 and f"pip install '{extra}'" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_bare_outdir_is_a_usage_error(tmp_path):
    (tmp_path / "report.json").write_text(json.dumps({"mode": "bare", "entries": []}))
    result = cli(KERAS3, tmp_path)
    assert result.exit_code == 2
    assert "no model.py" in result.stderr


def test_not_a_convert_output(tmp_path):
    result = cli(KERAS3, tmp_path)
    assert result.exit_code == 2 and "no report.json" in result.stderr


def test_input_shape_in_the_wrong_layout(outputs):
    require_tf()
    result = cli(KERAS3, outputs["keras3"], "--input-shape", "1,16,16,3")
    assert result.exit_code == 2
    assert "PyTorch model's layout" in result.stderr


def test_tf_output_must_exist(outputs):
    require_tf()
    result = cli(WRN, outputs["wrn"], "--tf-output", "nope")
    assert result.exit_code == 2 and "--tf-output 'nope'" in result.stderr
    ok = cli(WRN, outputs["wrn"], "--tf-input", "input", "--tf-output", "fc/logits:0", "-q")
    assert ok.exit_code == 0 and ok.output == ""
