"""Generated models, readable and inference forms, through torch's compilers and exporters:
torch.export, jit.trace, jit.script (from the written model.py, as a user would), the legacy and the
dynamo ONNX exporters, each giving the eager model's outputs (ONNX: a valid model of the same output
shape); and in bfloat16 / float16. Two sources: a Keras model, and a TF graph whose modules nest by
scope (plain nn.Module containers)."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import pytest
import torch

from tf2torch import api

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SOURCES = {"keras": (FIXTURES / "keras3/cnn.keras", (2, 3, 16, 16)),
           "tf-graph": (FIXTURES / "wrn16_2/model.ckpt", (2, 3, 32, 32))}  # scoped: self.block1_layer_0.conv1


@pytest.fixture(scope="module", params=sorted(SOURCES))
def generated(request, tmp_path_factory):
    source, shape = SOURCES[request.param]
    out = tmp_path_factory.mktemp("exporters") / "out"
    api.convert(source, out)
    spec = importlib.util.spec_from_file_location(f"exporters_model_{request.param.replace('-', '_')}",
                                                  out / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.INPUT = shape
    return module


@pytest.mark.parametrize("inference", [False, True], ids=["readable", "inference"])
@pytest.mark.parametrize("route", ["export", "jit.trace", "jit.script", "onnx-legacy", "onnx-dynamo"])
def test_generated_model_through(generated, tmp_path, route, inference):
    model = generated.load_model(inference=inference)
    x = torch.randn(*generated.INPUT, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = model(x)
        if route == "export":
            actual = torch.export.export(model, (x,)).module()(x)
        elif route == "jit.trace":
            actual = torch.jit.trace(model, x)(x)
        elif route == "jit.script":
            actual = torch.jit.script(model)(x)
        else:
            import onnx  # the test extra (onnxscript too, for the dynamo exporter)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, (x,), tmp_path / "m.onnx", dynamo=route == "onnx-dynamo")
            graph = onnx.load(str(tmp_path / "m.onnx"))
            onnx.checker.check_model(graph)
            dims = [d.dim_value for d in graph.graph.output[0].type.tensor_type.shape.dim]
            print(f"{route}: {len(graph.graph.node)} ONNX nodes, output {dims}")
            # the legacy exporter leaves the batch axis symbolic (dim_value 0), dynamo fixes it to 2
            assert dims[0] in (0, expected.shape[0]) and dims[1:] == list(expected.shape[1:])
            return
    diff = (actual - expected).abs().max().item()
    print(f"{route} ({'inference' if inference else 'readable'} form): max abs diff {diff:.2e}")
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
def test_generated_model_in_half_precision(generated, dtype):
    """model.to(dtype) runs on this CPU and stays near float32 (a half format's ~3 significant digits)."""
    model = generated.load_model()
    x = torch.randn(*generated.INPUT, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(x)
        actual = model.to(dtype)(x.to(dtype)).float()
    rel = ((actual - expected).abs().max() / expected.abs().max()).item()
    # the control is the format itself: rounding every weight and activation to a half format's epsilon
    # (bfloat16 7.8e-3, float16 9.8e-4) moves these outputs by about one epsilon (measured 1.2x); 4x is the bound
    bound = 4 * torch.finfo(dtype).eps
    print(f"{dtype}: max rel diff vs float32 {rel:.2e} (bound {bound:.1e}, 4x the format's epsilon)")
    assert actual.dtype == torch.float32 and rel < bound
