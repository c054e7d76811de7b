"""Load tf2torch's converted repositories with transformers 5 (no TF classes there) and print what happened.

Run in a venv with transformers 5 (``make hf5-venv``): ``python tests/hf/load_in_v5.py OUT [OUT ...]``,
each OUT a converted repository with ``inputs.npz`` and ``expected.npz`` (TF's logits, or a bare model's
first output) beside it. Prints one JSON object: per OUT, the transformers version, ``from_pretrained``'s
loading info, the relative error of the logits against TF's and the model's own float64 drift
(``tests.support.numerics``, imported from the repository root), or the exception raised. It judges nothing: the test that runs it does.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: tests.support
from tests.support.numerics import rel_error  # noqa: E402


def run(model: Any, inputs: dict[str, np.ndarray], dtype: torch.dtype | None = None) -> np.ndarray:
    feed = {k: torch.from_numpy(v) for k, v in inputs.items()}
    if dtype is not None:
        feed = {k: v.to(dtype) if v.is_floating_point() else v for k, v in feed.items()}
    with torch.no_grad():
        output = model(**feed)
    logits = getattr(output, "logits", None)  # a bare model (BertModel, GPT2Model) has none: its first output
    return (logits if logits is not None else output[0]).double().numpy()


def load(out: Path) -> dict[str, Any]:
    try:
        architecture = json.loads((out / "config.json").read_text())["architectures"][0]
        model, info = getattr(transformers, architecture).from_pretrained(out, output_loading_info=True)
        model.eval()
        inputs = dict(np.load(out.parent / "inputs.npz"))
        expected = np.load(out.parent / "expected.npz")["logits"]
        actual = run(model, inputs)
        drift = rel_error(run(copy.deepcopy(model).double(), inputs, torch.float64), actual)
        return {"class": architecture, "loading_info": {k: sorted(map(str, v)) for k, v in info.items()},
                "error": rel_error(actual, expected), "drift": drift}
    except Exception as exc:  # reported, not raised: the test prints every repo's outcome at once
        return {"exception": f"{type(exc).__name__}: {exc}"}


def main(outs: list[str]) -> None:
    result = {"transformers": transformers.__version__, "torch": torch.__version__,
              "repos": {out: load(Path(out)) for out in outs}}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
