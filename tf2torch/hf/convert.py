"""``tf2torch convert REPO -o OUT``: map a transformers repository's TF weights onto its PyTorch class.

Order matters for the all-or-nothing promise: the input is scanned and refused first, the output location
checked, then everything is planned (no tensor read), the contract checked, and only then is OUT written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import __version__, dtypes
from ..errors import UsageError
from ..map.rules import NO_RULES, Rules
from ..plan import TensorPlan
from ..readers.jsonsafe import load_json
from . import CONFIG, onto, repo, target


def convert_repo(source: str | Path, out_dir: str | Path | None, *, hf_class: str | None = None,
                 dtype: str | None = None, force: bool = False, dry_run: bool = False,
                 report_path: str | Path | None = None, max_shard_size: int | None = None,
                 progress: Callable[[TensorPlan, int], None] | None = None) -> Any:
    """Convert the repository ``source`` into ``out_dir``; returns a ``Conversion``.

    ``max_shard_size``: bytes per ``model-0000i-of-0000N.safetensors`` (default ``write.MAX_SHARD_SIZE``,
    read at call time so that tests can lower it)."""
    root = Path(source)
    if not root.is_dir() or not (root / CONFIG).is_file():
        raise UsageError(f"{source}: --hf-class needs a transformers repository directory (config.json + "
                         "tf_model.h5), or an original TF1 checkpoint with --hf-config CONFIG; pass one, or drop "
                         "--hf-class")
    if out_dir is None and not dry_run:
        raise UsageError("convert needs an output directory (-o OUTDIR) unless --dry-run")
    out = Path(out_dir) if out_dir is not None else None
    onto.check_output(out, dry_run=dry_run, force=force)
    found = repo.scan(root)
    config = load_json((root / CONFIG).read_bytes(), str(root / CONFIG), "a transformers config")
    if not isinstance(config, dict):
        raise UsageError(f"{root / CONFIG}: expected a JSON object (a transformers config); fix or re-download it")
    transformers = target.import_transformers()
    cls = target.model_class(transformers, target.class_name(config, hf_class, root / CONFIG), root / CONFIG)
    spec = _read(found)
    model = target.build(cls, root)
    plans, report, untied = onto.map_onto(spec, model, dtype=dtypes.by_name(dtype) if dtype else None,
                                          aliases=_aliases(spec), rules=_on_the_model(spec, cls.__name__))
    onto.enforce(report, f"{root}: {cls.__name__} from {CONFIG} does not take {found.weights_label}", CONFIG,
                 out=out, report_path=report_path, force=force)
    original = config.get("architectures") or ["(no architectures)"]
    line = (f"Converted to PyTorch ({cls.__name__}, model.safetensors) from the TensorFlow weights "
            f"({found.weights_label}, {original[0]}) by tf2torch {__version__}.")
    return onto.emit(plans, report, found, {**config, "architectures": [cls.__name__]}, line, out=out,
                     dry_run=dry_run, force=force, report_path=report_path, max_shard_size=max_shard_size,
                     progress=progress, untied=bool(untied))


def _read(found: repo.Repo) -> Any:
    if found.index is None:
        from ..readers.keras_h5 import read_keras_h5

        return read_keras_h5(found.weights[0])
    from .shards import read_shards

    return read_shards(found.index, found.weights)


def _aliases(spec: Any) -> dict[str, str]:
    """Names to match by: transformers' TF classes name a scope ``A___B`` where the PyTorch module is ``B``
    (``mlm___cls`` for BERT's ``cls`` head: its TF->PT loader replaces "/A___B/" by "/B/"); bounded as
    there, against pathological names."""
    return {v.name: re.sub(r"(^|/)[^/]*___([^/]*)(?=/)", r"\1\2", v.name) for v in spec.variables
            if "___" in v.name and v.name.count("___") <= 10 and len(v.name) <= 2048}


# Weights a TF class keeps in a layer of its own that the PyTorch class keeps on the model itself, by class:
# TAPAS's cell-selection head (TFTapasComputeTokenLogits under name_scope "output", TFTapasComputeColumnLogits
# under "column_output") computes einsum(sequence, output_weights) + output_bias as TapasForQuestionAnswering
# does with its own output_weights / output_bias / column_output_* (modeling_tf_tapas.py, modeling_tapas.py).
_ON_THE_MODEL = {"TapasForQuestionAnswering": ("compute_token_logits/output/", "compute_column_logits/column_output/")}


def _on_the_model(spec: Any, target: str) -> Rules:
    """``_ON_THE_MODEL``'s weights paired with their keys (pairs, not names to match by: the matcher's vocabulary
    would read ``output_weights`` as a module's ``weight``)."""
    scopes = _ON_THE_MODEL.get(target, ())
    pairs = {v.name: v.name[len(scope):].removesuffix(":0") for v in spec.variables for scope in scopes
             if v.name.startswith(scope)}
    return Rules(pairs=pairs, source=f"transformers' {target}: weights its TF class keeps in a layer") if pairs \
        else NO_RULES
