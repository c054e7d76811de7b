"""Generated models, readable and inference forms, through torch's compilers and exporters:
torch.export, jit.trace, jit.script (from the written model.py, as a user would) and the legacy ONNX
exporter, each giving the eager model's outputs."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import pytest
import torch

from tf2torch import api

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures/keras3/cnn.keras"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("exporters") / "out"
    api.convert(FIXTURE, out)
    spec = importlib.util.spec_from_file_location("exporters_model", out / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("inference", [False, True], ids=["readable", "inference"])
@pytest.mark.parametrize("route", ["export", "jit.trace", "jit.script", "onnx-legacy"])
def test_generated_model_through(generated, tmp_path, route, inference):
    model = generated.load_model(inference=inference)
    x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = model(x)
        if route == "export":
            actual = torch.export.export(model, (x,)).module()(x)
        elif route == "jit.trace":
            actual = torch.jit.trace(model, x)(x)
        elif route == "jit.script":
            actual = torch.jit.script(model)(x)
        else:
            import onnx  # the test extra
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, (x,), tmp_path / "m.onnx", dynamo=False)
            onnx.checker.check_model(str(tmp_path / "m.onnx"))
            return
    diff = (actual - expected).abs().max().item()
    print(f"{route} ({'inference' if inference else 'readable'} form): max abs diff {diff:.2e}")
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6)
