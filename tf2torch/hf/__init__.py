"""Hugging Face mode: a transformers repository with TensorFlow weights in, one with PyTorch weights out.

transformers 5 dropped its TensorFlow classes and ``from_pretrained(from_tf=True)``, leaving Hub repos that
hold only ``tf_model.h5`` (or its shards) + ``config.json`` unloadable. ``tf2torch convert REPO -o OUT``
writes OUT as a repository ``from_pretrained`` loads: ``config.json``, ``model.safetensors`` (sharded above
a size), the repo's other files unchanged, the model card with a provenance line, and ``report.json``.

The target is the config's architecture without its ``TF`` prefix (``--hf-class`` overrides), built on the
meta device and used only for its state_dict keys and shapes; weights are mapped by the zero-rules matcher
(``map.plan.onto_model``) and streamed from the h5 files into the output. Conversion needs transformers
(the ``hf`` extra) but never TensorFlow. Modules: ``repo`` (what the input holds, refused inputs),
``shards`` (sharded h5), ``target`` (the transformers class), ``convert`` (mapping, ties), ``write``.

This module stays import-light: the CLI asks ``is_repo`` before deciding on a mode.
"""

from __future__ import annotations

from pathlib import Path

CONFIG = "config.json"


def is_repo(source: str | Path) -> bool:
    """A directory with a ``config.json`` and neither ``saved_model.pb`` nor a ``checkpoint`` file: a
    transformers repository.

    (A SavedModel or a TF checkpoint directory stays with its own reader even if a config sits beside it.)"""
    path = Path(source)
    return (path.is_dir() and (path / CONFIG).is_file() and not (path / "saved_model.pb").is_file()
            and not (path / "checkpoint").is_file())
