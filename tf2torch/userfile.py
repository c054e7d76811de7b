"""The one way a Python file on disk is imported: the user's ``--model`` port, and ``OUTDIR/model.py``.

Three places run such a file: conversion builds the user's port (``map/target.py``), ``verify`` imports
``OUTDIR/model.py`` (``compare/run_torch.py``), and a patched ``model.py`` imports the user's port when it
builds the model (``rewrite/patch.py`` copies ``import_python_file`` below into it verbatim, because
generated files run without tf2torch). One rule for all three:

* name: private and fixed by the file's resolved path and its bytes, ``_tf2torch_user_<stem>_<digest>``,
  so it never takes a name of the user's own (``model``, ``net``), two files never share one (two
  OUTDIRs never see each other's classes), and the same unchanged file gets the same name in every
  process (a pickled model's classes are found again once the file is loaded);
* ``sys.modules``: the module is entered *before* it executes (``dataclasses`` with ``from __future__
  import annotations`` and pickling look a class's module up there), removed if executing fails, and
  kept after success;
* once per version: loading a file whose name is already in ``sys.modules`` returns that module; an
  edited file has another digest, so it is executed again (a notebook that edits its port and converts
  again gets the new code, not a stale module);
* ``sys.path``: the file's folder goes first, as when the user runs ``python port.py``, so its sibling
  modules import, also from functions that import lazily.

Only files the user named (or tf2torch wrote) come here; nothing inside an *input* model is executed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from pathlib import Path

#: What ``import_python_file``'s source needs above it when it is copied into a generated file.
INLINE_IMPORTS = ("import hashlib", "import importlib.util", "import sys", "from pathlib import Path")


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


def inline_source() -> str:
    """``import_python_file`` as text for a generated file; it needs ``INLINE_IMPORTS`` above it."""
    return inspect.getsource(import_python_file)

