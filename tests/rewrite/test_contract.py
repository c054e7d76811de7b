"""The trust contract on the command line: exit 0 only when every key the forward pass uses is filled
and every variable is placed; otherwise exit 1, one line naming the keys and the fix, and a report.

Ports of fixtures/tf1 (a TF1 graph the fixture script built with TF; its logits are in io.npz) with one
thing changed each, written next to the test's temp directory as a user would write them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from click.testing import CliRunner

from tests.conftest import require_tf
from tests.util import to_torch_layout
from tf2torch.cli import EXIT_ERROR, main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CKPT = FIXTURES / "tf1/model.ckpt"
NET = Path(__file__).with_name("tf1_user_net.py").read_text()
UNUSED = ["--allow-unexpected", "^embedding/", "--allow-unexpected", "^extras/"]


def _port(folder: Path, init_extra: str = "", forward_extra: str = "") -> Path:
    """tf1_user_net.Net with ``init_extra`` appended to __init__ and ``forward_extra`` applied to the logits."""
    text = NET.replace("        self.fc = nn.Linear(144, 10)\n",
                       "        self.fc = nn.Linear(144, 10)\n" + init_extra)
    if forward_extra:
        text = text.replace("        return self.fc(torch.flatten(self.dw(x), 1))",
                            f"        y = self.fc(torch.flatten(self.dw(x), 1))\n        return {forward_extra}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "net.py").write_text(text)
    return folder / "net.py"


def _convert(port: Path, out: Path, *extra: str):
    runner = CliRunner()
    result = runner.invoke(main, ["convert", str(CKPT), "--model", f"{port}:Net", "-o", str(out), *UNUSED, *extra],
                           catch_exceptions=False)
    assert "Traceback" not in result.output + result.stderr
    return result


def _logits_from(out: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """Load OUT/model.py in a fresh interpreter (as a user would) and run it on the fixture's input."""
    io = np.load(FIXTURES / "tf1/io.npz")
    np.save(out.parent / "x.npy", to_torch_layout(io["input"]).numpy())
    code = ("import sys, numpy, torch; sys.path.insert(0, sys.argv[1]); import model; "
            "m = model.load_model(); x = torch.from_numpy(numpy.load(sys.argv[2])); "
            "numpy.save(sys.argv[3], m(x).detach().numpy())")
    done = subprocess.run([sys.executable, "-c", code, str(out), str(out.parent / "x.npy"), str(out.parent / "y.npy")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return torch.from_numpy(np.load(out.parent / "y.npy")), torch.from_numpy(io["output"])


def _check(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    diff = (actual - expected).abs().max().item()
    print(f"{what}: max abs diff {diff:.2e}, max |logit| {expected.abs().max().item():.2f}")
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5 * expected.abs().max().item())


def test_a_module_that_never_runs_is_harmless(tmp_path):
    port = _port(tmp_path / "user", "        self.unused_head = nn.Linear(144, 3)\n")
    result = _convert(port, tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""  # quiet on success
    report = json.loads((tmp_path / "out/report.json").read_text())
    missing = {e["key"]: e["allowed"] for e in report["entries"] if e["status"] == "missing"}
    assert set(missing) == {"unused_head.weight", "unused_head.bias"}
    assert all("never runs in forward()" in why for why in missing.values()), missing
    _check(*_logits_from(tmp_path / "out"), "port with an unused head")


def test_a_missing_key_of_a_module_that_runs_fails_and_leaves_a_report(tmp_path):
    port = _port(tmp_path / "user", "        self.head = nn.Linear(10, 10)\n", "self.head(y)")
    result = _convert(port, tmp_path / "out")
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'head.bias' [10]; 'head.weight' [10, 10]" in lines[0]
    assert "--allow-missing PATTERN" in lines[0] and "out.failed-report.json" in lines[0]
    assert not (tmp_path / "out").exists()  # no partial output
    report = json.loads((tmp_path / "out.failed-report.json").read_text())
    assert report["failed"] is True
    assert {e["key"] for e in report["entries"] if e["status"] == "missing" and not e["allowed"]} == {
        "head.weight", "head.bias"}


def test_allow_missing_accepts_named_keys(tmp_path):
    port = _port(tmp_path / "user", "        self.head = nn.Linear(10, 10)\n", "self.head(y)")
    result = _convert(port, tmp_path / "out", "--allow-missing", r"^head\.")
    assert result.exit_code == 0, result.stderr
    report = json.loads((tmp_path / "out/report.json").read_text())
    assert {e["allowed"] for e in report["entries"] if e["status"] == "missing"} == {r"--allow-missing '^head\\.'"}


def test_a_buffer_the_constructor_computes_is_harmless_a_random_one_is_not(tmp_path):
    fixed = _port(tmp_path / "fixed", '        self.register_buffer("scale", torch.full((10,), 2.0))\n',
                  "y * self.scale")
    result = _convert(fixed, tmp_path / "out_fixed")
    assert result.exit_code == 0, result.stderr
    report = json.loads((tmp_path / "out_fixed/report.json").read_text())
    assert [e["allowed"] for e in report["entries"] if e["key"] == "scale"] == [
        "a buffer the model's constructor computes (the same value on every build)"]
    actual, expected = _logits_from(tmp_path / "out_fixed")
    _check(actual, expected * 2, "port with a constant buffer")
    noisy = _port(tmp_path / "noisy", '        self.register_buffer("scale", torch.rand(10))\n', "y * self.scale")
    result = _convert(noisy, tmp_path / "out_noisy")
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR and "'scale' [10]" in result.stderr


def test_a_shape_mismatch_names_source_layout_expected_shape_and_fix(tmp_path):
    port = _port(tmp_path / "user")
    port.write_text(port.read_text().replace("nn.Linear(144, 10)", "nn.Linear(100, 10)").replace(
        "torch.flatten(self.dw(x), 1)", "torch.flatten(self.dw(x), 1)[:, :100]"))
    result = _convert(port, tmp_path / "out")
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR
    assert "'fc/weights' [144, 10] -> 'fc.weight'" in result.stderr
    assert "gives [10, 144], the model expects [10, 100]" in result.stderr


def test_patched_model_imports_the_users_sibling_modules_and_files(tmp_path):
    """OUT/model.py imports the user's file where it is: its `from blocks import ...` and its
    `Path(__file__)` data file work from OUT; when the file is gone the error says so."""
    user = tmp_path / "user"
    port = _port(user)
    (user / "blocks.py").write_text("import torch.nn as nn\n\n\ndef head(n):\n    return nn.Linear(144, n)\n")
    (user / "sizes.json").write_text('{"classes": 10}\n')
    text = port.read_text().replace("import torch.nn as nn\n", "import json\nfrom pathlib import Path\n\n"
                                    "import torch.nn as nn\nfrom blocks import head\n")
    port.write_text(text.replace("nn.Linear(144, 10)",
                                 'head(json.loads(Path(__file__).with_name("sizes.json").read_text())["classes"])'))
    result = _convert(port, tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    _check(*_logits_from(tmp_path / "out"), "port with a sibling module and a data file")
    shutil.move(user, tmp_path / "moved")
    done = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import model; "
                           "model.load_model()", str(tmp_path / "out")], capture_output=True, text=True)
    print(done.stderr.strip().splitlines()[-1])
    assert done.returncode != 0 and "is gone; restore it there" in done.stderr


def test_tf_padding_never_overrides_the_graph_and_says_what_it_filled(tmp_path):
    """The fixture's graph describes every conv and the pool, so --tf-padding same fills nothing."""
    port = _port(tmp_path / "user", "        self.extra = nn.Conv2d(16, 16, 3, padding=1, stride=2)\n")
    result = _convert(port, tmp_path / "out", "--tf-padding", "same", "--allow-missing", "^extra")
    assert result.exit_code == 0, result.stderr
    report = json.loads((tmp_path / "out/report.json").read_text())
    notes = " ".join(report["notes"])
    print(notes)
    assert "--tf-padding same applied to 1 module(s) the source does not describe: extra" in notes
    assert {r["module"] for r in report["rewrites"]} == {"conv1", "pool", "bn1", "extra"}


def test_an_untied_same_pool_fails_unless_the_rules_name_its_module(tmp_path):
    """A port whose pool is functional (F.max_pool2d: no module to rewrite) cannot be made exact: exit 1
    naming the TF pool; a [padding] rule for some other module does not silence it."""
    port = _port(tmp_path / "user")
    port.write_text(port.read_text().replace("x = self.pool(torch.relu(self.bn1(self.conv1(x))))",
                                             "x = F.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 3, 2, 1)")
                    .replace("import torch.nn as nn\n", "import torch.nn as nn\nimport torch.nn.functional as F\n"))
    rules = tmp_path / "rules.toml"
    rules.write_text('[padding]\n"dw" = "same"\n')
    result = _convert(port, tmp_path / "out", "--rules", rules)
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR and "MaxPool 'MaxPool2d' (max [3, 3]/[2, 2])" in result.stderr


def test_a_port_with_postponed_annotations_and_a_dataclass_converts_and_verifies(tmp_path):
    """User report: `from __future__ import annotations` + a @dataclass made `convert --model` fail
    ("'NoneType' object has no attribute '__dict__'": dataclasses looks the class's module up in
    sys.modules while the file runs) though the same file worked in verify. Both now import it alike."""
    port = _port(tmp_path / "user")
    text = port.read_text().replace("import torch\n", "from __future__ import annotations\n\n"
                                    "from dataclasses import dataclass\n\nimport torch\n", 1)
    port.write_text(text.replace("class Net(nn.Module):", "@dataclass\nclass Head:\n    features: int = 144\n"
                                 "    classes: int = 10\n\n\nclass Net(nn.Module):").replace(
        "nn.Linear(144, 10)", "nn.Linear(Head().features, Head().classes)"))
    result = _convert(port, tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    _check(*_logits_from(tmp_path / "out"), "port with a dataclass and postponed annotations")
    require_tf()
    done = CliRunner().invoke(main, ["verify", str(CKPT), str(tmp_path / "out")])
    print(done.output)
    assert done.exit_code == 0, done.output + done.stderr
    assert "MATCH" in done.output
