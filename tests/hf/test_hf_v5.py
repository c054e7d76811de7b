"""The point of the mode: transformers 5, which has no TF classes, loads what tf2torch wrote and computes
TensorFlow's numbers. transformers 5 cannot share a venv with 4.57 (the test extra's pin, needed to build
the TF repos), so ``load_in_v5.py`` runs in ``.venv-hf5`` (``make hf5-venv``; ``make test`` creates it).
"""

from __future__ import annotations

import pytest

from tests.hf.conftest import CASES
from tests.hf.v5 import judge, load_all


@pytest.mark.tf
def test_transformers_5_loads_every_converted_repo_and_computes_tf_numbers(converted):
    outs = {name: converted(name) for name in sorted(CASES)}
    result = load_all(outs)
    failures = [f for name in outs for f in judge(name, result[name], result["transformers"])]
    assert not failures, "; ".join(failures)
