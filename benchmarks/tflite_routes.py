"""The routes ``tflite_speed.py`` times, each run by a worker process of its own.

    python benchmarks/tflite_routes.py ROUTE WHERE X.npy OUT.npy

A worker loads one route (a converted model, an interpreter), runs it once at batch 8 on ``X.npy`` and
saves the output to ``OUT.npy`` (for the error column), prints ``ready``, then answers each line on
stdin: ``b1`` / ``b8`` runs one forward at that batch and prints its time in seconds; end of input ends
it. The coordinator sends the lines, so the routes take turns one forward at a time and never run at
the same moment. One process per route because TensorFlow and torch in one process can crash, and so
that each route's thread settings and allocator are its own.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

BATCHES = (1, 8)
# route name -> (package, kernels): the LiteRT routes differ only in the package and the op resolver
LITERT = {"litert-xnnpack": ("tf", "default"), "litert-builtin": ("tf", "builtin"),
          "ai-edge-litert-xnnpack": ("ai_edge_litert", "default"), "ai-edge-litert-builtin": ("ai_edge_litert", "builtin")}


def _interpreter_call(package: str, kernels: str, path: str, x: np.ndarray) -> Callable[[], np.ndarray]:
    """An interpreter resized to ``x``'s batch (TF's converter writes a -1 batch into the signature), one
    thread; ``default`` keeps the default delegates (XNNPACK), ``builtin`` the builtin kernels alone."""
    if package == "tf":
        import warnings

        import tensorflow as tf

        warnings.simplefilter("ignore")  # tf.lite.Interpreter's notice that LiteRT leaves TensorFlow
        Interpreter, Resolver = tf.lite.Interpreter, tf.lite.experimental.OpResolverType
    else:
        from ai_edge_litert.interpreter import Interpreter
        from ai_edge_litert.interpreter import OpResolverType as Resolver

    resolver = Resolver.AUTO if kernels == "default" else Resolver.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    interp = Interpreter(model_path=path, num_threads=1, experimental_op_resolver_type=resolver)
    index = interp.get_input_details()[0]["index"]
    interp.resize_tensor_input(index, list(x.shape))
    interp.allocate_tensors()
    out_index = interp.get_output_details()[0]["index"]

    def call() -> np.ndarray:
        interp.set_tensor(index, x)  # copies the batch in, as an application has to
        interp.invoke()
        return interp.get_tensor(out_index)  # a copy, as torch's forward allocates its output

    return call


def _torch_model(route: str, where: str) -> tuple[Callable, bool]:
    """(model, takes NCHW?): tf2torch's generated model.py (readable, or ``load_model(inference=True)``:
    BatchNorms folded, channels-last conv weights), whose NHWC image input became channels-first; or
    onnx2torch's GraphModule of tflite2onnx's ONNX file, whose input keeps the layout the ONNX file
    declares."""
    if route.startswith("tf2torch"):
        import importlib.util

        spec = importlib.util.spec_from_file_location("converted_model", Path(where) / "model.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.load_model(inference=route.endswith("inference")), True
    import onnx
    from onnx2torch import convert

    graph = onnx.load(where)
    dims = [d.dim_value for d in graph.graph.input[0].type.tensor_type.shape.dim]
    # tflite2onnx keeps TFLite's NHWC interface (transposes inside); permute only if a file declares (N, 3, H, W)
    return convert(graph).eval(), dims[1] == 3 and dims[3] != 3


def _torch_call(model: Callable, nchw: bool, x: np.ndarray) -> Callable[[], np.ndarray]:
    """One thread, eager, no_grad; the input's layout change is made once, outside the timed call (a
    pipeline feeding a channels-first model prepares channels-first batches)."""
    import torch

    t = torch.from_numpy(x)
    t = t.permute(0, 3, 1, 2).contiguous() if nchw else t

    def call() -> np.ndarray:
        with torch.no_grad():
            return model(t).numpy()

    return call


def serve(route: str, where: str, x_path: str, out_path: str) -> None:
    x = np.load(x_path)
    if route in LITERT:
        package, kernels = LITERT[route]
        calls = {b: _interpreter_call(package, kernels, where, x[:b]) for b in BATCHES}
    else:
        import torch

        torch.set_num_threads(1)
        model, nchw = _torch_model(route, where)
        calls = {b: _torch_call(model, nchw, x[:b]) for b in BATCHES}
    np.save(out_path, calls[8]())
    print("ready", flush=True)
    for line in sys.stdin:  # "b1" / "b8": one timed forward at that batch
        call = calls[int(line.strip().removeprefix("b"))]
        start = time.perf_counter()
        call()
        print(time.perf_counter() - start, flush=True)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    serve(*sys.argv[1:5])
