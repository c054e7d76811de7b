"""The generated model checked against the weights planned for it, before anything is written: its
``state_dict()`` must have exactly the planned keys, each of the planned shape.

A converter that gives a module a weight of another shape (a (1, C) gamma for a (C,) LayerNorm) would
otherwise produce a model.py whose ``load_model()`` fails later, after ``convert`` said success. The
model is built on torch's ``meta`` device: no memory, no data, milliseconds. The source is tf2torch's
own generated code (identifiers from the namespace, literals via repr), never code from an input file.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import UnsupportedError
from ..write.plan import TensorPlan


def check_generated(source: str, plans: Sequence[TensorPlan], where: str, missing: frozenset[str] = frozenset()) -> None:
    """Raise when the generated model's state_dict and the plans disagree (``missing``: keys the report
    already lists as missing, which the model keeps at their initial values)."""
    import torch

    namespace: dict = {"__name__": "tf2torch_selfcheck", "__file__": "model.py"}
    exec(compile(source, "model.py", "exec"), namespace)  # noqa: S102  (our own generated source, see above)
    with torch.device("meta"):
        model = namespace["build_model"]()
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    planned = {p.key: tuple(p.shape) for p in plans}
    problems = [f"{k}: the module holds {list(expected[k])}, the weights are {list(planned[k])}"
                for k in sorted(planned) if k in expected and expected[k] != planned[k]]
    problems += [f"{k}: written, but the generated model has no such key" for k in sorted(set(planned) - set(expected))]
    problems += [f"{k}: the generated model has it, nothing fills it"
                 for k in sorted(set(expected) - set(planned) - missing)]
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise UnsupportedError(f"{where}: tf2torch generated a model its weights do not fit ({shown}); "
                               "this is a tf2torch bug: please report it with the file")
