"""Heavy imports are lazy: the everyday commands load neither TensorFlow nor torch.

Each command runs in a fresh interpreter (``tf2torch.cli.run``, as the console script does), which
then reports which of the heavy modules ended up in ``sys.modules``. Code generation for Keras models
needs the text of torch modules, not torch: it reads the source files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"

CHILD = textwrap.dedent("""
    import json, sys
    sys.argv = ["tf2torch", *sys.argv[1:]]
    from tf2torch.cli import run
    try:
        run()
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    heavy = ["torch", "tensorflow", "keras", "tf_keras", "numpy", "h5py"]
    print(json.dumps({"code": code, "loaded": [m for m in heavy if m in sys.modules]}), file=sys.stderr)
""")

COMMANDS = {
    "help": ["--help"],
    "inspect-checkpoint": ["inspect", str(FIXTURES / "tf1" / "model.ckpt")],
    "inspect-check": ["inspect", "--check", str(FIXTURES / "tf1" / "model.ckpt")],
    "inspect-keras": ["inspect", str(FIXTURES / "keras3" / "cnn.keras")],
    "convert-bare-checkpoint": ["convert", str(FIXTURES / "tf1" / "model.ckpt"), "-o", "{out}", "--weights-only"],
    "convert-keras-generated-model": ["convert", str(FIXTURES / "keras3" / "cnn.keras"), "-o", "{out}"],
    "convert-keras-h5": ["convert", str(FIXTURES / "keras2" / "cnn.h5"), "-o", "{out}"],
}
# `--help` needs click only, and listing a TF1 checkpoint reads protobuf bytes only: not even numpy
# (~0.1 s of the 0.3 s that `inspect` may take on a large checkpoint, benchmarks/run.py).
NOT_LOADED = {"help": ["torch", "tensorflow", "keras", "tf_keras", "numpy", "h5py"],
              "inspect-checkpoint": ["torch", "tensorflow", "keras", "tf_keras", "numpy"]}


def loaded_modules(args: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, env=env,
                          timeout=120)
    return json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(COMMANDS), ids=list(COMMANDS))
def test_command_imports_neither_tensorflow_nor_torch(name: str, tmp_path: Path) -> None:
    args = [a.replace("{out}", str(tmp_path / "out")) for a in COMMANDS[name]]
    result = loaded_modules(args)
    assert result["code"] == 0, result
    unwanted = NOT_LOADED.get(name, ["torch", "tensorflow", "keras", "tf_keras"])
    assert not set(result["loaded"]) & set(unwanted), result["loaded"]
    if name.startswith("convert"):
        assert (tmp_path / "out" / "model.safetensors").is_file()


def test_pt_output_does_load_torch(tmp_path: Path) -> None:
    """The check above is meaningful: a step that needs torch does import it in the same harness."""
    result = loaded_modules(["convert", str(FIXTURES / "tf1" / "model.ckpt"), "-o", str(tmp_path / "out"),
                             "--format", "pt", "--weights-only"])
    assert result["code"] == 0 and "torch" in result["loaded"], result
