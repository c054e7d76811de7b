"""The one way a Python file on disk is imported: the user's ``--model`` port, and ``OUTDIR/model.py``.

Three places run such a file: conversion builds the user's port (``map/target.py``), ``verify`` imports
``OUTDIR/model.py`` (``compare/run_torch.py``), and a patched ``model.py`` imports the user's port when it
builds the model (``rewrite/patch.py`` copies ``import_python_file`` into it verbatim, because generated
files run without tf2torch: it lives in the runtime library, ``runtime/userfile.py``). One rule for all three:

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

from .codegen import library
from .runtime.userfile import import_python_file

__all__ = ["INLINE_IMPORTS", "import_python_file", "inline_source"]

#: What ``import_python_file``'s source needs above it when it is copied into a generated file.
INLINE_IMPORTS = ("import hashlib", "import importlib.util", "import sys", "from pathlib import Path")


def inline_source() -> str:
    """``import_python_file`` as text for a generated file; it needs ``INLINE_IMPORTS`` above it."""
    return library.inline_text(["import_python_file"])

