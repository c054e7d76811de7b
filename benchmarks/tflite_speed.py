"""Converted TFLite models' speed against LiteRT's CPU interpreter and tflite2onnx -> onnx2torch; conversion time.

    python benchmarks/tflite_speed.py [--models MobileNetV2,ResNet50] [--rounds 15] [--convert-rounds 5]

``--rounds 3`` runs end to end in under 5 minutes here once the .tflite files are cached
(TF's converter adds ~30 s per model the first time).

MobileNetV2, EfficientNetB0 and ResNet50 (keras.applications, random seeded weights with the BatchNorm
statistics randomised, 128 px, logits) are made float32 ``.tflite`` files by TF's own converter, cached
in ``~/.cache/tf2torch-bench/tflite/``. Each file goes through every route that installs here, each
route in a worker process of its own (``tflite_routes.py``), timed per forward at batch 1 and 8, one
thread: tf2torch's ``model.py`` (readable, and ``load_model(inference=True)``; eager, no_grad); TF's
``tf.lite.Interpreter`` with its default delegate (XNNPACK) and with the builtin kernels alone
(``BUILTIN_WITHOUT_DEFAULT_DELEGATES``); the same two from the ``ai-edge-litert`` package; tflite2onnx
then onnx2torch. After one untimed forward each, the routes take turns, in a new shuffled order every
round, one forward at a time; the table shows medians (with the fastest round) and ratios of medians
to TF's interpreter with XNNPACK. The error column is each route's batch-8 output against the builtin
kernels' (max |a - b| / max |b|), the yardstick of tf2torch's tests (XNNPACK rounds differently). A route that cannot be installed or fails
on a model is a row saying so. Then each file's ``tf2torch convert`` against reading it (``cat``) and
copying it durably (``cp`` + ``sync``), as ``run.py`` times steps. Writes ``tflite_speed.json``.
Needs onnx2torch's torchvision: run it in the bench venv (``make bench-models``).
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
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from make_checkpoint import cache_root  # noqa: E402
from run import Step, machine, run_rounds, tf2torch_command, version  # noqa: E402
from tflite_routes import LITERT  # noqa: E402

from tests.support.numerics import rel_error  # noqa: E402

MODELS = {"MobileNetV2": 128, "EfficientNetB0": 128, "ResNet50": 128}
ROUTES = ("tf2torch", "tf2torch-inference", "onnx2torch", *LITERT)
PEER, TRUTH = "litert-xnnpack", "litert-builtin"


def make_tflite(name: str, size: int) -> Path:
    """The model's float32 .tflite by TF's converter (cached: TF's converter takes ~30 s per model here)."""
    path = cache_root() / "tflite" / f"{name}-{size}px-seed0.tflite"
    if path.is_file():
        return path
    import keras
    import tensorflow as tf
    from model_speed import _randomise

    model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3), classifier_activation=None)
    _randomise(model, seed=0)  # BN statistics too, so a wrong fold would show
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    partial.replace(path)
    return path


def prepare(name: str, work: Path) -> dict[str, str]:
    """Every route's input: the .tflite itself, tf2torch's output directory, tflite2onnx's ONNX file; a
    route that cannot be had is ``unavailable: why``."""
    done = subprocess.run([sys.executable, __file__, "--make-tflite", name], capture_output=True, text=True)
    if done.returncode != 0:  # TensorFlow in a process of its own: it and torch in one process can crash
        raise SystemExit(f"making {name}.tflite failed:\n{done.stderr[-2000:]}")
    tflite = Path(done.stdout.strip().splitlines()[-1])
    rng = np.random.default_rng(1)
    np.save(work / f"{name}.x.npy", rng.uniform(0, 1, (8, MODELS[name], MODELS[name], 3)).astype(np.float32))
    routes = {r: str(tflite) for r in LITERT}
    out = work / f"{name}.tf2torch"
    subprocess.run([*tf2torch_command(), "convert", str(tflite), "-o", str(out), "--force", "-q"], check=True)
    routes["tf2torch"] = routes["tf2torch-inference"] = str(out)
    onnx_path = work / f"{name}.onnx"
    done = subprocess.run([sys.executable, "-c", "import sys, tflite2onnx; tflite2onnx.convert(*sys.argv[1:])",
                           str(tflite), str(onnx_path)], capture_output=True, text=True)
    routes["onnx2torch"] = str(onnx_path) if done.returncode == 0 else f"unavailable: tflite2onnx: {_last(done.stderr)}"
    for route, package in (("ai-edge-litert-xnnpack", "ai-edge-litert"), ("ai-edge-litert-builtin", "ai-edge-litert")):
        if version(package) == "not installed":
            routes[route] = f"unavailable: {package} not installed"
    return routes


def _last(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else "no message"


def start_workers(name: str, routes: dict[str, str], work: Path) -> tuple[dict, dict]:
    """(route -> worker process ready to time, route -> result entry); workers start together."""
    procs, result = {}, {}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    for route in ROUTES:
        if routes[route].startswith("unavailable"):
            result[route] = {"status": routes[route]}
            continue
        argv = [sys.executable, str(HERE / "tflite_routes.py"), route, routes[route], str(work / f"{name}.x.npy"),
                str(work / f"{name}.{route}.npy")]
        # stderr to a file: a pipe nobody reads would stall a chatty worker once its buffer fills
        with open(work / f"{name}.{route}.log", "w") as log:
            procs[route] = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                            text=True, env=env)
        procs[route].log = Path(log.name)
    ready = {}
    for route, proc in procs.items():
        if proc.stdout.readline().strip() == "ready":
            ready[route], result[route] = proc, {}
        else:  # e.g. an ONNX op onnx2torch has no converter for, a batch the file cannot take
            proc.stdin.close()
            proc.wait()
            result[route] = {"status": f"fails: {_last((work / f'{name}.{route}.log').read_text())}"}
    truth = work / f"{name}.{TRUTH}.npy"
    for route in ready:
        if truth.is_file():
            result[route]["rel_err_vs_builtin"] = rel_error(np.load(work / f"{name}.{route}.npy"), np.load(truth))
    return ready, result


def time_rounds(workers: dict, result: dict, rounds: int) -> None:
    """One untimed forward per route and batch, then ``rounds`` rounds: every route one forward, in a
    new shuffled order each round; the median per route and batch into ``result``."""

    def forward(route: str, batch: int) -> float:
        workers[route].stdin.write(f"b{batch}\n")
        workers[route].stdin.flush()
        line = workers[route].stdout.readline()
        if not line:  # the worker died mid-run: stop loudly rather than publish a table without it
            raise SystemExit(f"{route} stopped during the timed rounds: {_last(workers[route].log.read_text())}")
        return float(line)

    for batch in (1, 8):
        times: dict[str, list[float]] = {r: [] for r in workers}
        for route in workers:
            forward(route, batch)
        for _ in range(rounds):
            order = list(workers)
            random.shuffle(order)
            for route in order:
                times[route].append(forward(route, batch))
        for route, ts in times.items():
            result[route][f"b{batch}_ms"] = 1000 * statistics.median(ts)
            result[route][f"b{batch}_ms_range"] = [1000 * min(ts), 1000 * max(ts)]
    for proc in workers.values():
        proc.stdin.close()
        proc.wait()


def conversion(files: dict[str, Path], work: Path, rounds: int) -> dict:
    """``tf2torch convert`` of each file against ``cat FILE > /dev/null`` and ``cp FILE`` + ``sync`` (all
    from the page cache after run.py's untimed warm-up run; tf2torch fsyncs what it writes, so cp + sync
    is the like-for-like floor); medians of wall time and peak RSS."""
    steps = []
    for name, path in files.items():
        out, copy = work / f"{name}.convert", work / f"{name}.copy"
        steps += [Step(f"{name}:convert", [*tf2torch_command(), "convert", str(path), "-o", str(out), "-q"], [out]),
                  # the same up to writing: reading, lowering, code generation (what is fixed, not per byte)
                  Step(f"{name}:dry-run", [*tf2torch_command(), "convert", str(path), "--dry-run", "-q"]),
                  Step(f"{name}:cat", ["sh", "-c", f'cat "{path}" > /dev/null']),
                  Step(f"{name}:cp+sync", ["sh", "-c", f'cp "{path}" "{copy}" && sync "{copy}"'], [copy])]
    run_rounds(steps, rounds)
    table: dict[str, dict] = {}
    for step in steps:
        name, kind = step.name.split(":")
        table.setdefault(name, {"bytes": files[name].stat().st_size})[kind] = {
            "wall_s": step.median("wall_s"), "rss_mb": step.median("rss_mb"), "cpu_s": step.median("cpu_s"),
            "wall_range_s": [min(r["wall_s"] for r in step.runs), max(r["wall_s"] for r in step.runs)]}
    return table


def render(speed: dict, convert: dict) -> str:
    # medians, with the fastest round beside them: on a loaded machine a long forward is preempted more
    # often than a short one, so the minimum is the least disturbed figure of each route
    lines = [f"| model | route | b1 ms (min) | b8 ms (min) | b1 / {PEER} | b8 / {PEER} | max rel err vs builtin kernels |",
             "|---|---|---|---|---|---|---|"]
    for name, routes in speed.items():
        peer = routes.get(PEER, {})
        for route in (r for r in ROUTES if r in routes):
            r = routes[route]
            if "status" in r:
                lines.append(f"| {name} | {route} | {r['status']} | | | | |")
                continue
            ratio = [f"{r[f'b{b}_ms'] / peer[f'b{b}_ms']:.2f}" if f"b{b}_ms" in peer else "—" for b in (1, 8)]
            err = f"{r['rel_err_vs_builtin']:.1e}" if "rel_err_vs_builtin" in r else "—"
            ms = [f"{r[f'b{b}_ms']:.1f} ({r[f'b{b}_ms_range'][0]:.1f})" for b in (1, 8)]
            lines.append(f"| {name} | {route} | {ms[0]} | {ms[1]} | {ratio[0]} | {ratio[1]} | {err} |")
    if convert:
        lines += ["", "| model | .tflite MB | convert s (CPU s) | --dry-run s (CPU s) | cat s | cp + sync s | "
                  "convert / cp + sync | convert peak RSS MB |", "|---|---|---|---|---|---|---|---|"]
        for name, c in convert.items():
            wall = {k: c[k]["wall_s"] for k in ("convert", "dry-run", "cat", "cp+sync")}
            lines.append(f"| {name} | {c['bytes'] / 1e6:.1f} | {wall['convert']:.2f} ({c['convert']['cpu_s']:.2f}) | "
                         f"{wall['dry-run']:.2f} ({c['dry-run']['cpu_s']:.2f}) | {wall['cat']:.3f} | "
                         f"{wall['cp+sync']:.3f} | {wall['convert'] / wall['cp+sync']:.1f} | {c['convert']['rss_mb']:.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=15, help="timed forwards per route and batch")
    parser.add_argument("--convert-rounds", type=int, help="timed conversions per model (0: none; default: --rounds, "
                        "at most 5)")
    parser.add_argument("--out", type=Path, default=HERE / "tflite_speed.json")
    parser.add_argument("--make-tflite", metavar="MODEL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make_tflite:
        os.environ["KERAS_BACKEND"] = "tensorflow"
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        print(make_tflite(args.make_tflite, MODELS[args.make_tflite]))
        return
    names = args.models.split(",")
    if args.convert_rounds is None:
        args.convert_rounds = min(args.rounds, 5)
    results = {"machine": machine(), "versions": {p: version(p) for p in (
        "tensorflow", "ai-edge-litert", "tflite2onnx", "onnx2torch", "onnx", "torchvision")},
        "rounds": args.rounds, "convert_rounds": args.convert_rounds, "load_average": {"start": os.getloadavg()},
        "speed": {}, "convert": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work, files = Path(tmp), {}
        for name in names:
            routes = prepare(name, work)
            files[name] = Path(routes[PEER])
            workers, result = start_workers(name, routes, work)
            time_rounds(workers, result, args.rounds)
            results["speed"][name] = result
            print(render({name: result}, {}), flush=True)
            args.out.write_text(json.dumps(results, indent=2) + "\n")  # what is done so far
        if args.convert_rounds:
            results["convert"] = conversion(files, work, args.convert_rounds)
    results["load_average"]["end"] = os.getloadavg()
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(render(results["speed"], results["convert"]))


if __name__ == "__main__":
    main()
