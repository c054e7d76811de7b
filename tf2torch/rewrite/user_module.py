"""How a patched ``model.py`` imports the user's own model file: from where it was converted.

A copy of the user's file in OUTDIR would lose what the file finds next to itself (sibling modules it
imports, data files it opens via ``Path(__file__)``). So the patched file imports the original, with
its folder on ``sys.path`` as when the user ran it, and says clearly when that file is gone. The
function below is inlined verbatim into patched files (they run without tf2torch).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def load_user_module(user_file):
    """The user's model file as a module (imported once per process, under its own name if free)."""
    user_file = Path(user_file)
    if not user_file.is_file():
        raise FileNotFoundError(
            f"{user_file}: the PyTorch model file this port was converted onto is gone; restore it there, "
            "or convert again with --model pointing at its new place")
    name = user_file.stem if user_file.stem.isidentifier() else "_tf2torch_user_model"
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", None) or "").resolve() == user_file.resolve():
            return loaded
        name = f"_tf2torch_user_{abs(hash(str(user_file)))}"  # another module owns the name
        if name in sys.modules:
            return sys.modules[name]
    folder = str(user_file.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # the file's sibling modules import as they did for the user
    spec = importlib.util.spec_from_file_location(name, user_file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it: dataclasses and pickling look their module up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
