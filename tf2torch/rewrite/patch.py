"""Patch a user's PyTorch model so it computes what TensorFlow computed: 'SAME' padding and BN epsilon.

Which modules need it comes from ``sources``, the rewrites from ``patch_same`` (static pads when the input
size is known from ``--input-shape``, else run-time padding); here the contract failures of pools tied to
no module, the rewrites' report entries, and the patched ``model.py`` are made. The mode's orchestration
is ``tf2torch.pipelines.onto_model``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..map.account import Report
from ..spec import ModelSpec
from .patch_same import Rewrite
from .sources import window_kind
from .ties import Ties


def untied_pools(model: Any, ties: Ties, overrides: dict[str, str], failure: str) -> list[str]:
    """A SAME pool of the source that no module could be tied to would be left as the port wrote it,
    unless the rules file's [padding] names every pool module that is not tied."""
    same = [p for p in ties.untied if p.padding == "SAME" and any(k > 1 for k in p.kernel)]
    loose = [path for path, m in model.named_modules()
             if window_kind(m).startswith(("MaxPool", "AvgPool")) and path not in ties.pools]
    if not same or (loose and all(path in overrides for path in loose)):
        return []
    why = f"the model could not be run ({failure})" if failure else \
        ("no nn pool module sits at the same place in the forward pass with that kind, window and stride "
         "(a functional F.max_pool2d cannot be rewritten: make it an nn.MaxPool2d module)")
    return [f"{len(same)} TF 'SAME' pool(s) could not be tied to a module of the PyTorch model: "
            + ", ".join(f"{p.what} ({p.mode} {list(p.kernel)}/{list(p.stride)})" for p in same[:5])
            + f"; {why}; name the modules in a rules [padding] section (\"path.to.pool\" = \"same\")"
            + (" or pass --input-shape" if failure else "")]


def report_rewrites(report: Report, rewrites: list[Rewrite], spec: ModelSpec, tf_padding: str | None) -> None:
    """Each rewrite in report.json with its evidence, and notes where padding stays dynamic or unknown."""
    for r in rewrites:
        report.rewrites.append({"module": r.path, "kind": r.kind, "args": _jsonable(r.args), "what": r.why})
    if any(r.dynamic for r in rewrites):
        report.notes.append("some SAME padding is computed at run time (no --input-shape given, or not reached)")
    if not spec.ops and spec.graph is None and tf_padding != "same":
        report.notes.append("no TF graph (.meta) or Keras config and no --tf-padding: no padding rewrites were made")


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return str(value)
    return value


def render_patched(path: Path, attr: str, rewrites: list[Rewrite], weights_name: str, missing: tuple[str, ...]) -> str:
    """A model.py that imports the user's file from where it is, applies the rewrites, and has
    build_model/load_model; runnable without tf2torch."""
    from .. import userfile
    from ..codegen import library
    from ..codegen.emit import literal
    from ..codegen.model_file import footer

    user_file = path.resolve()
    # the user-file loader, the SAME modules and the rewrites, with what they use: one runtime library
    runtime = library.inline_text(["import_python_file", "SamePad", "SamePool", *library.names_in("runtime/apply.py")])
    table = ",\n".join(f"    ({literal(r.kind)}, {literal(r.path)}, {literal(r.args)}),  # {literal(r.why)}"
                       for r in rewrites)
    lines = [
        f'"""The PyTorch model of {literal(str(user_file))} ({attr}), patched by tf2torch so that it computes',
        "what the TensorFlow model computed: TF 'SAME' padding and norm epsilons, each rewrite with its evidence",
        "in TF2TORCH_REWRITES. The state_dict keys are the model's own. Runs without tf2torch.",
        '"""',
        "",
        # the stdlib the weight reader and the user-file loader need, in isort's order
        *sorted({"import json", "import struct", *userfile.INLINE_IMPORTS}, key=lambda line: (
            line.startswith("from"), line)),
        "",
        "import torch",
        "import torch.nn.functional as F",
        "from torch import nn",
        "",
        f"USER_FILE = Path({literal(str(user_file))})  # imported from there: its sibling modules and files are found",
        f"USER_CALLABLE = {literal(attr)}",
        "",
        "",
        runtime.rstrip(),  # import_python_file: the same rule as at conversion and in verify
        "",
        "",
        f"TF2TORCH_REWRITES = (\n{table}\n)" if rewrites else "TF2TORCH_REWRITES = ()",
        "",
        "",
        "def _tf2torch_model():",
        "    return apply_rewrites(getattr(import_python_file(USER_FILE), USER_CALLABLE)(), TF2TORCH_REWRITES)",
        "",
        "",
        footer("_tf2torch_model", weights_name, "The user's model with tf2torch's rewrites applied.", missing),
    ]
    return "\n".join(lines) + "\n"
