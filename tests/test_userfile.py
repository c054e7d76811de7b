"""The one rule a user's .py (and OUTDIR/model.py) is imported by: a private name fixed by path and
bytes, in sys.modules before it runs and after it succeeded, executed once per version, its folder on
sys.path; and the copy patched model.py files carry is that same function, runnable without tf2torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tf2torch import userfile
from tf2torch.userfile import import_python_file


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_registered_before_it_runs_with_a_private_name(tmp_path):
    """What dataclasses needs with postponed annotations; the name is never the user's own ("model")."""
    source = ("from __future__ import annotations\nimport sys\nfrom dataclasses import dataclass\n\n"
              "SEEN = sys.modules.get(__name__) is not None\n\n\n@dataclass\nclass Size:\n    n: int = 3\n")
    module = import_python_file(_write(tmp_path / "model.py", source))
    assert module.SEEN and module.Size().n == 3
    assert module.__name__.startswith("_tf2torch_user_model_") and sys.modules[module.__name__] is module
    assert "model" not in sys.modules or sys.modules["model"] is not module


def test_once_per_version_and_two_files_never_share_a_module(tmp_path):
    first = _write(tmp_path / "a" / "net.py", "import itertools\nRUNS = next(itertools.count())\nX = 1\n")
    other = _write(tmp_path / "b" / "net.py", first.read_text())
    module = import_python_file(first)
    assert import_python_file(first) is module  # unchanged: not executed again
    assert import_python_file(other) is not module  # same stem and text, another place
    first.write_text("X = 2\n")
    edited = import_python_file(first)
    assert edited is not module and edited.X == 2  # edited: the new code, not a stale module


def test_sibling_modules_import_and_a_failing_file_is_not_left_behind(tmp_path):
    _write(tmp_path / "user" / "blocks_for_userfile_test.py", "WIDTH = 7\n")
    port = _write(tmp_path / "user" / "port.py", "from blocks_for_userfile_test import WIDTH\nraise ValueError(WIDTH)\n")
    before = set(sys.modules)
    with pytest.raises(ValueError, match="7"):
        import_python_file(port)
    assert not any(name.startswith("_tf2torch_user_port_") for name in set(sys.modules) - before)
    port.write_text("from blocks_for_userfile_test import WIDTH\n")
    assert import_python_file(port).WIDTH == 7


def test_a_missing_file_is_one_line_naming_it_and_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        import_python_file(tmp_path / "gone.py")
    message = str(caught.value)
    assert "\n" not in message and "gone.py" in message
    assert "is gone; restore it there" in message and "--model" in message


def test_the_copy_in_generated_files_runs_alone(tmp_path):
    """INLINE_IMPORTS + inline_source() is all a patched model.py needs to load a user's file."""
    port = _write(tmp_path / "user" / "port.py", "from __future__ import annotations\nfrom dataclasses import "
                  "dataclass\n\n\n@dataclass\nclass Cfg:\n    n: int = 5\n")
    script = "\n".join(userfile.INLINE_IMPORTS) + "\n\n\n" + userfile.inline_source() + (
        f"\n\nm = import_python_file({str(port)!r})\n"
        "assert m.Cfg().n == 5 and sys.modules[m.__name__] is m\n"
        "assert not any(n.split('.')[0] == 'tf2torch' for n in sys.modules)\n"
        "print(m.__name__)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # the same file gets the same name in every process (pickled classes are found again)
    assert done.stdout.strip() == import_python_file(port).__name__
