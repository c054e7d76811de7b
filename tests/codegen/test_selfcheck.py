"""convert refuses a generated model its own weights do not fit (checked on torch's meta device)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tf2torch import api
from tf2torch.codegen.selfcheck import check_generated
from tf2torch.errors import UnsupportedError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_planned_weights_fit_the_generated_model():
    result = api.convert(FIXTURES / "keras3" / "cnn.keras", None, dry_run=True)
    check_generated(result.model_source, result.plans, "cnn.keras")  # what convert itself ran: no error


def test_a_weight_of_another_shape_is_refused_naming_the_key():
    result = api.convert(FIXTURES / "graphs" / "frozen.pb", None, dry_run=True)
    plans = list(result.plans)
    i = next(i for i, p in enumerate(plans) if p.key == "bn.weight")
    plans[i] = dataclasses.replace(plans[i], shape=(1, *plans[i].shape))  # the (1, C) gamma bug
    with pytest.raises(UnsupportedError, match=r"bn\.weight: the module holds \[4\], the weights are \[1, 4\]"):
        check_generated(result.model_source, plans, "frozen.pb")
    with pytest.raises(UnsupportedError, match="fc.bias: the generated model has it, nothing fills it"):
        check_generated(result.model_source, [p for p in result.plans if p.key != "fc.bias"], "frozen.pb")
