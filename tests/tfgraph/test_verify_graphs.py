"""``verify`` on TF graphs converted with no --model: the frozen .pb run in a TF session, per layer; a
SavedModel's signature, outputs by key; and a broken conversion (seed 000's symmetric padding on the
stride-2 conv) named at its first diverging layer, with the TF tensor it was compared against."""

from __future__ import annotations

import json
from pathlib import Path

from tests.compare.breakers import bn_epsilon, copy_outdir, symmetric_padding
from tests.conftest import require_tf
from tests.test_hostile import run_cli

GRAPHS = Path(__file__).resolve().parents[2] / "fixtures" / "graphs"


def _converted(source: Path, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    result = run_cli("convert", source, "-o", out, "-q")
    assert result.exit_code == 0, result.stderr
    return out


def test_verify_a_frozen_graph_layer_by_layer(tmp_path):
    require_tf()
    out = _converted(GRAPHS / "frozen.pb", tmp_path)
    result = run_cli("verify", GRAPHS / "frozen.pb", out, "--json")
    data = json.loads(result.stdout)
    layers = {r["name"]: r for r in data["rows"] if r["kind"] == "layer"}
    print("frozen.pb verify:", {n: r["max_abs"] for n, r in layers.items()})
    assert result.exit_code == 0 and data["ok"], result.stdout
    assert set(layers) == {"conv", "bn", "dw", "fc"}  # every weighted module, against its own TF tensor
    assert layers["conv"]["tf"] == "BiasAdd:0" and layers["fc"]["tf"] == "logits:0"  # the conv's bias included


def test_verify_names_the_first_diverging_layer_of_a_broken_graph_conversion(tmp_path):
    require_tf()
    out = _converted(GRAPHS / "frozen.pb", tmp_path)
    broken = copy_outdir(out, tmp_path / "broken")
    symmetric_padding(broken, "conv")  # TF pads 10 -> 5 at stride 2 bottom/right only
    result = run_cli("verify", GRAPHS / "frozen.pb", broken)
    print(result.stderr[-400:])
    assert result.exit_code == 3 and "first diverging layer: 'conv' (BiasAdd:0 -> conv)" in result.stderr, result.stderr
    wrong_eps = copy_outdir(out, tmp_path / "eps")
    bn_epsilon(wrong_eps, "bn", 1e-5)
    result = run_cli("verify", GRAPHS / "frozen.pb", wrong_eps, "--json")
    assert result.exit_code == 3 and json.loads(result.stdout)["first_diverging"] == "bn", result.stdout


def test_verify_a_savedmodel_signature_by_output_key(tmp_path):
    require_tf()
    out = _converted(GRAPHS / "module", tmp_path)
    result = run_cli("verify", GRAPHS / "module", out, "--json")
    data = json.loads(result.stdout)
    outputs = [(r["tf"], r["max_abs"]) for r in data["rows"] if r["kind"] == "output"]
    print("module verify:", outputs)
    assert result.exit_code == 0 and [name for name, _ in outputs] == ["logits", "pooled"], result.stdout
