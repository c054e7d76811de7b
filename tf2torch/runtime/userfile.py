"""The user-file loader, as runtime library code: patched ``model.py`` files carry ``import_python_file``
(copied by ``codegen/library.py``) to import the user's port the way tf2torch did. The rule it follows,
and the other places that use it, are in ``tf2torch/userfile.py``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path


def import_python_file(path: str | Path):  # -> types.ModuleType (unannotated: the copy imports no types)
    """The Python file ``path`` as a module, executed once per version (see tf2torch/userfile.py)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: expected the Python file this model is built from there, found nothing: it is gone; "
            "restore it there, or convert again with --model pointing at its new place")
    digest = hashlib.sha256(str(path).encode() + b"\0" + path.read_bytes()).hexdigest()[:16]
    stem = path.stem if path.stem.isidentifier() else "file"
    name = f"_tf2torch_user_{stem}_{digest}"
    if name in sys.modules:  # this file, unchanged, was loaded before in this process
        return sys.modules[name]
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # its sibling modules import as they did for the user
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: expected a Python source file, found one Python cannot import; "
                          "name a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before it runs: dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]  # a half-run module must not be returned by the next load
        raise
    return module
