"""Converted-model speed: tf2torch's readable and inference forms against the other routes to PyTorch.

    python benchmarks/model_speed.py [--models MobileNetV2,ResNet50] [--rounds 15] [--out model_speed.json]

For each ``keras.applications`` model (random seeded weights, BN statistics included, 128 px; InceptionV3
139 px) and a BERT-base encoder (128 tokens) the same ``.keras`` file goes through every route that can be installed here:

* ``tf2torch``: the generated ``model.py`` (readable form), the same with ``--flat`` (one module per Keras
  layer, no block classes) and ``load_model(inference=True)`` (BatchNorms folded into their convs);
* ``onnx2torch``: tf2onnx (the frozen ``tf.function`` graph) then onnx2torch (an fx GraphModule; NHWC like tf2onnx);
* ``keras-torch``: the same ``.keras`` file loaded by Keras 3 on its torch backend;
* ``native``: the hand-written twin where one exists (torchvision's, or ``torch.nn.TransformerEncoder``
  for BERT; same architecture, its own random weights: speed only).

Each is timed on CPU, one thread, eager, ``no_grad``, batch 1 and 8, the routes taking turns in a
shuffled order every round (medians of ``--rounds``). The error against TensorFlow's output is printed
next to each tf2torch/onnx2torch form. Peak memory of a batch-8 forward: in a fresh process, the most
that malloc's live bytes grow over the call, sampled at every module boundary. A route that cannot be
installed is reported as such. Needs torchvision for onnx2torch: run it in a venv where torchvision
imports (this machine: torch 2.14.1 with torchvision 0.29.1), e.g. ``make bench-models``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
MODELS = {"MobileNetV2": 128, "ResNet50": 128, "EfficientNetB0": 128, "InceptionV3": 139, "BERT-base": 128}
TORCHVISION = {"MobileNetV2": "mobilenet_v2", "ResNet50": "resnet50"}
BERT = {"vocabulary": 30522, "layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072}


def _randomise(model, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        weights = []
        for w in layer.weights:
            name, shape = w.name, tuple(w.shape)
            if "moving_variance" in name or name.endswith("variance"):
                weights.append(rng.uniform(0.5, 1.5, shape))
            elif "gamma" in name:
                weights.append(1 + rng.normal(0, 0.1, shape))
            elif len(shape) >= 2:
                weights.append(rng.normal(0, np.sqrt(1.0 / max(np.prod(shape[:-1]), 1)), shape))
            else:
                weights.append(rng.normal(0, 0.1, shape))
        if weights:
            layer.set_weights([x.astype(np.float32) for x in weights])


def bert_encoder(length: int):
    """A BERT-base encoder (post-norm, tanh GELU) as a Functional Keras model on token ids: the token
    embedding, then 12 blocks of self-attention and feed-forward (BERT's position and segment embeddings
    are two more additions before the first LayerNorm; left out, they would need a second input)."""
    import keras
    from keras import layers

    ids = keras.Input((length,), dtype="int32", name="token_ids")
    tokens = layers.Embedding(BERT["vocabulary"], BERT["hidden"], name="token_embedding")(ids)
    x = layers.LayerNormalization(epsilon=1e-12, name="embeddings_norm")(tokens)
    for i in range(BERT["layers"]):
        attended = layers.MultiHeadAttention(BERT["heads"], BERT["hidden"] // BERT["heads"], name=f"attention_{i}")(x, x)
        x = layers.LayerNormalization(epsilon=1e-12, name=f"attention_norm_{i}")(layers.Add()([x, attended]))
        # tanh-approximate GELU, as BERT's own code (and keras-hub) use: a keras.ops call in the graph
        hidden = keras.ops.gelu(layers.Dense(BERT["intermediate"], name=f"intermediate_{i}")(x), approximate=True)
        out = layers.Dense(BERT["hidden"], name=f"output_{i}")(hidden)
        x = layers.LayerNormalization(epsilon=1e-12, name=f"output_norm_{i}")(layers.Add()([x, out]))
    return keras.Model(ids, x, name="bert_base")


def prepare(name: str, size: int, work: Path) -> dict:
    """Build and save the Keras model; TF's output on a fixed batch; every route's loader inputs."""
    import keras
    import tensorflow as tf

    if name == "BERT-base":
        model = bert_encoder(size)
    else:
        model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3),
                                                  classifier_activation=None)
    _randomise(model, seed=0)
    path = work / f"{name}.keras"
    model.save(path)
    rng = np.random.default_rng(1)
    if name == "BERT-base":
        x = rng.integers(0, BERT["vocabulary"], (8, size)).astype(np.int32)
    else:
        x = rng.uniform(0, 1, (8, size, size, 3)).astype(np.float32)
    expected = model.predict(x, verbose=0)
    np.save(work / f"{name}.x.npy", x)
    np.save(work / f"{name}.y.npy", expected)
    out = work / f"{name}.tf2torch"
    subprocess.run([sys.executable, "-m", "tf2torch", "convert", str(path), "-o", str(out), "--force", "-q"],
                   check=True)
    flat = work / f"{name}.tf2torch-flat"  # one module per Keras layer: what the block classes cost, if anything
    subprocess.run([sys.executable, "-m", "tf2torch", "convert", str(path), "-o", str(flat), "--force", "-q", "--flat"],
                   check=True)
    routes = {"tf2torch": str(out), "tf2torch-flat": str(flat), "tf2torch-inference": str(out),
              "keras-torch": str(path)}
    try:
        import tf2onnx
        from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

        # Frozen first: from_function keeps some captured variables (EfficientNet's Normalization
        # statistics) as extra graph inputs, which onnx2torch then asks the caller for.
        spec = tf.TensorSpec((None, *x.shape[1:]), tf.as_dtype(x.dtype), name="x")
        frozen = convert_variables_to_constants_v2(tf.function(model).get_concrete_function(spec))
        onnx_model, _ = tf2onnx.convert.from_graph_def(
            frozen.graph.as_graph_def(), input_names=[t.name for t in frozen.inputs],
            output_names=[t.name for t in frozen.outputs], opset=17)
        onnx_path = work / f"{name}.onnx"
        onnx_path.write_bytes(onnx_model.SerializeToString())
        routes["onnx2torch"] = str(onnx_path)
    except Exception as exc:  # a peer that does not install or convert is reported, not hidden
        routes["onnx2torch"] = f"unavailable: {type(exc).__name__}: {str(exc)[:120]}"
    routes["native"] = "torch.nn" if name == "BERT-base" else TORCHVISION.get(name, "unavailable: no torchvision twin")
    return routes


def native_bert():
    """BERT-base in plain torch.nn: the same embedding and 12 post-norm GELU encoder layers, which in
    eval mode run PyTorch's fused fast path (its own random weights: speed only)."""
    import torch

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = torch.nn.Embedding(BERT["vocabulary"], BERT["hidden"])
            self.norm = torch.nn.LayerNorm(BERT["hidden"], eps=1e-12)
            layer = torch.nn.TransformerEncoderLayer(BERT["hidden"], BERT["heads"], BERT["intermediate"], dropout=0.0,
                                                     activation="gelu", batch_first=True, layer_norm_eps=1e-12)
            self.encoder = torch.nn.TransformerEncoder(layer, BERT["layers"], enable_nested_tensor=False)

        def forward(self, ids):
            return self.encoder(self.norm(self.embedding(ids)))

    return Encoder().eval()


class KerasOnTorch:
    """A ``.keras`` file run by Keras 3 on its torch backend (torch tensors in and out)."""

    def __init__(self, path: str) -> None:
        import keras

        if keras.backend.backend() != "torch":
            raise RuntimeError(f"KERAS_BACKEND is {keras.backend.backend()!r}; this route needs 'torch'")
        self.model = keras.saving.load_model(path, compile=False)

    def __call__(self, x):
        return self.model(x, training=False)


def load(route: str, where: str):
    """(callable on the batch as torch expects it -> torch tensor, NHWC?)"""

    if route.startswith("tf2torch"):
        import importlib.util

        spec = importlib.util.spec_from_file_location(f"model_{abs(hash(where))}", Path(where) / "model.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.load_model(inference=route.endswith("inference")), False
    if route == "onnx2torch":
        import onnx
        from onnx2torch import convert

        return convert(onnx.load(where)).eval(), True
    if route == "keras-torch":
        return KerasOnTorch(where), True
    if where == "torch.nn":
        return native_bert(), False
    import torchvision

    return getattr(torchvision.models, where)(weights=None).eval(), False


def _input(x: np.ndarray, nhwc: bool):
    import torch

    t = torch.from_numpy(x)
    return t if nhwc or t.ndim != 4 else t.permute(0, 3, 1, 2).contiguous()


def _live_bytes() -> int:
    """Bytes malloc has handed out and not taken back (glibc ``mallinfo2``: heap + mmapped chunks),
    which is where torch's CPU allocator gets every tensor."""
    import ctypes

    class Info(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                   "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Info
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


def peak_child(route: str, where: str, x_path: str) -> None:
    """Run in a fresh process: print the peak growth (MiB) of live malloc'd bytes over one batch-8
    forward, sampled before and after every module call (activations live between modules)."""
    import torch

    torch.set_num_threads(1)
    if route == "keras-torch":  # Keras calls its layers itself: module hooks do not see them
        print(json.dumps({"peak_mib": None}))
        return
    model, nhwc = load(route, where)
    x = _input(np.load(x_path), nhwc)
    samples: list[int] = []
    for module in (model if isinstance(model, torch.nn.Module) else model.model).modules():
        module.register_forward_pre_hook(lambda *_: samples.append(_live_bytes()))
        module.register_forward_hook(lambda *_: samples.append(_live_bytes()))
    with torch.no_grad():
        model(x[:1])
        samples.clear()
        before = _live_bytes()
        model(x)
    print(json.dumps({"peak_mib": (max(samples) - before) / 2**20 if samples else None}))


def bench(name: str, routes: dict, work: Path, rounds: int) -> dict:
    import torch

    torch.set_num_threads(1)
    x = np.load(work / f"{name}.x.npy")
    expected = np.load(work / f"{name}.y.npy")
    loaded, result = {}, {}
    for route, where in routes.items():
        if where.startswith("unavailable"):
            result[route] = {"status": where}
            continue
        entry: dict = {}
        try:
            model, nhwc = load(route, where)
            with torch.no_grad():
                out = model(_input(x, nhwc)).numpy()
        except Exception as exc:  # e.g. an op onnx2torch has no converter for
            result[route] = {"status": f"unavailable: {type(exc).__name__}: {str(exc)[:100]}"}
            continue
        if route != "native":
            entry["rel_err_vs_tf"] = float(np.abs(out - expected).max() / np.abs(expected).max())
        loaded[route] = (model, nhwc)
        result[route] = entry
    for batch in (1, 8):
        times: dict[str, list[float]] = {r: [] for r in loaded}
        inputs = {r: _input(x[:batch], nhwc) for r, (_, nhwc) in loaded.items()}
        with torch.no_grad():
            for r, (model, _) in loaded.items():  # warm-up
                model(inputs[r])
            for _ in range(rounds):
                order = list(loaded)
                random.shuffle(order)
                for r in order:
                    start = time.perf_counter()
                    loaded[r][0](inputs[r])
                    times[r].append(time.perf_counter() - start)
        for r in loaded:
            result[r][f"b{batch}_ms"] = 1000 * statistics.median(times[r])
    for r in loaded:
        done = subprocess.run([sys.executable, __file__, "--peak", r, routes[r], str(work / f"{name}.x.npy")],
                              capture_output=True, text=True)
        result[r]["peak_b8_mib"] = json.loads(done.stdout)["peak_mib"] if done.returncode == 0 else None
    return result


def render(results: dict) -> str:
    lines = ["| model | route | b1 ms | b8 ms | b1 / onnx2torch | b8 / onnx2torch | peak b8 MiB | rel err vs TF |",
             "|---|---|---|---|---|---|---|---|"]
    for name, routes in results.items():
        peer = routes.get("onnx2torch", {})
        for route, r in routes.items():
            if "status" in r:
                lines.append(f"| {name} | {route} | {r['status']} | | | | | |")
                continue
            ratio = [f"{r[f'b{b}_ms'] / peer[f'b{b}_ms']:.2f}" if f"b{b}_ms" in peer else "—" for b in (1, 8)]
            err = f"{r['rel_err_vs_tf']:.1e}" if "rel_err_vs_tf" in r else "—"
            peak = f"{r['peak_b8_mib']:.0f}" if r.get("peak_b8_mib") is not None else "—"
            lines.append(f"| {name} | {route} | {r['b1_ms']:.1f} | {r['b8_ms']:.1f} | {ratio[0]} | {ratio[1]} | "
                         f"{peak} | {err} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("model_speed.json"))
    parser.add_argument("--peak", nargs=3, metavar=("ROUTE", "WHERE", "X"))
    parser.add_argument("--prepare", nargs=2, metavar=("MODEL", "WORK"))
    args = parser.parse_args()
    # TensorFlow builds the models (in a process of its own); the timing side runs Keras on torch.
    os.environ["KERAS_BACKEND"] = "tensorflow" if args.prepare else "torch"
    if args.peak:
        peak_child(*args.peak)
        return
    if args.prepare:  # TensorFlow's side, in a process of its own: TF and torch in one process can crash
        name, work = args.prepare
        print(json.dumps(prepare(name, MODELS[name], Path(work))))
        return
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            done = subprocess.run([sys.executable, __file__, "--prepare", name, tmp], capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"preparing {name} failed:\n{done.stderr[-2000:]}")
            routes = json.loads(done.stdout.strip().splitlines()[-1])
            results[name] = bench(name, routes, Path(tmp), args.rounds)
            print(render({name: results[name]}), flush=True)
            args.out.write_text(json.dumps(results, indent=2) + "\n")  # what is done so far
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))


if __name__ == "__main__":
    main()
