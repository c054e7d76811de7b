"""Generate (once) the benchmark checkpoint: a TF1 ``Saver`` checkpoint with BERT-like names and shapes.

    python benchmarks/make_checkpoint.py            # prints the checkpoint prefix
    python benchmarks/make_checkpoint.py --layers 2 --out /tmp/small/model.ckpt
    python benchmarks/make_checkpoint.py --kernels 40     # issue 26's shape: 40 two-D kernels, ~1.05 GB

The default (BERT-large widths, 18 encoder layers) is about 1.04 GB in one data shard: the word
embeddings (30522 x 1024, 125 MB) are the largest tensor; most bytes are 1024 x 1024, 1024 x 4096 and
4096 x 1024 kernels, which a conversion transposes. It is written with real TensorFlow
(``tf.compat.v1.train.Saver``), into ``${XDG_CACHE_HOME:-~/.cache}/tf2torch-bench/`` (outside the
repository), and reused while its parameters match. Values are fed to each variable's initializer,
so no giant constant ever enters the graph (or the ``.meta`` file).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

DEFAULTS = {"layers": 18, "hidden": 1024, "intermediate": 4096, "vocab": 30522, "positions": 512, "seed": 0}
# Issue 26 states its target on "a 1 GB TF1 checkpoint (40 tensors, 2-D kernels transposed)": 40 kernels of
# 26 MB alternating (2048, 3200) and (3200, 2048), every byte transposed, no embeddings or biases.
KERNEL_ROWS, KERNEL_COLS = 2048, 3200
COMPLETE = "COMPLETE.json"  # written last: a directory without it is an interrupted generation


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tf2torch-bench"


def variables(layers: int, hidden: int, intermediate: int, vocab: int, positions: int) -> list[tuple[str, tuple]]:
    """(name, shape) of every float variable, in the order BERT's ``modeling.py`` creates them."""
    h, i = hidden, intermediate
    out: list[tuple[str, tuple]] = [
        ("bert/embeddings/word_embeddings", (vocab, h)),
        ("bert/embeddings/token_type_embeddings", (2, h)),
        ("bert/embeddings/position_embeddings", (positions, h)),
        ("bert/embeddings/LayerNorm/beta", (h,)),
        ("bert/embeddings/LayerNorm/gamma", (h,)),
    ]
    for n in range(layers):
        p = f"bert/encoder/layer_{n}"
        for proj in ("query", "key", "value"):
            out += [(f"{p}/attention/self/{proj}/kernel", (h, h)), (f"{p}/attention/self/{proj}/bias", (h,))]
        out += [
            (f"{p}/attention/output/dense/kernel", (h, h)), (f"{p}/attention/output/dense/bias", (h,)),
            (f"{p}/attention/output/LayerNorm/beta", (h,)), (f"{p}/attention/output/LayerNorm/gamma", (h,)),
            (f"{p}/intermediate/dense/kernel", (h, i)), (f"{p}/intermediate/dense/bias", (i,)),
            (f"{p}/output/dense/kernel", (i, h)), (f"{p}/output/dense/bias", (h,)),
            (f"{p}/output/LayerNorm/beta", (h,)), (f"{p}/output/LayerNorm/gamma", (h,)),
        ]
    out += [
        ("bert/pooler/dense/kernel", (h, h)), ("bert/pooler/dense/bias", (h,)),
        ("cls/predictions/transform/dense/kernel", (h, h)), ("cls/predictions/transform/dense/bias", (h,)),
        ("cls/predictions/transform/LayerNorm/beta", (h,)), ("cls/predictions/transform/LayerNorm/gamma", (h,)),
        ("cls/predictions/output_bias", (vocab,)),
        ("cls/seq_relationship/output_weights", (2, h)), ("cls/seq_relationship/output_bias", (2,)),
    ]
    return out


def kernel_variables(count: int) -> list[tuple[str, tuple]]:
    """(name, shape) of ``count`` dense kernels, the checkpoint issue 26's target is stated on."""
    shapes = ((KERNEL_ROWS, KERNEL_COLS), (KERNEL_COLS, KERNEL_ROWS))
    return [(f"dense_{n}/kernel", shapes[n % 2]) for n in range(count)]


def write_checkpoint(prefix: Path, *, layers: int, hidden: int, intermediate: int, vocab: int, positions: int,
                     seed: int = 0, kernels: int = 0) -> Path:
    """Write the checkpoint with TensorFlow's Saver at ``prefix`` (its directory is created)."""
    import numpy as np
    import tensorflow as tf

    prefix.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    graph = tf.Graph()
    with graph.as_default():
        made = []
        wanted = kernel_variables(kernels) if kernels else variables(layers, hidden, intermediate, vocab, positions)
        for name, shape in wanted:
            var = tf.compat.v1.get_variable(name, shape, tf.float32, initializer=tf.compat.v1.zeros_initializer())
            made.append((var, shape, name.endswith("gamma")))
        step = tf.compat.v1.train.get_or_create_global_step()
        saver = tf.compat.v1.train.Saver(max_to_keep=1)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(step.initializer)
            for var, shape, is_gamma in made:
                value = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
                if is_gamma:
                    value += np.float32(1)
                # Feed the initializer's input (the zeros tensor): the value never becomes a graph constant.
                sess.run(var.initializer, {var.initial_value: value})
                del value
            saver.save(sess, str(prefix), write_meta_graph=True)
    return prefix


def ensure_checkpoint(**params: int) -> Path:
    """The cached benchmark checkpoint's prefix, generated first (in a subprocess) if missing."""
    params = {**DEFAULTS, **params}
    if params.get("kernels"):
        tag = f"kernels-{params['kernels']}x{KERNEL_ROWS}x{KERNEL_COLS}-s{params['seed']}"
    else:
        params.pop("kernels", None)
        tag = "bert-{layers}l-{hidden}h-{intermediate}i-{vocab}v-{positions}p-s{seed}".format(**params)
    final = cache_root() / tag
    prefix = final / "model.ckpt"
    done = final / COMPLETE
    if done.is_file() and json.loads(done.read_text()) == params:
        return prefix
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{tag}.", dir=final.parent))
    try:
        args = [f"--{k}={v}" for k, v in params.items()]
        print(f"generating the benchmark checkpoint in {final} (once; needs TensorFlow) ...", file=sys.stderr)
        import subprocess

        subprocess.run([sys.executable, __file__, *args, "--out", str(staging / "model.ckpt")], check=True)
        # The Saver's `checkpoint` state file holds the absolute staging path; the reader then uses the
        # checkpoint of that name inside the moved directory, but rewrite it to be plain anyway.
        (staging / "checkpoint").write_text('model_checkpoint_path: "model.ckpt"\n'
                                            'all_model_checkpoint_paths: "model.ckpt"\n')
        (staging / COMPLETE).write_text(json.dumps(params))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return prefix


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for key, value in DEFAULTS.items():
        parser.add_argument(f"--{key}", type=int, default=value)
    parser.add_argument("--kernels", type=int, default=0, help="instead of BERT: this many 2-D kernels of 26 MB")
    parser.add_argument("--out", type=Path, help="write here (a prefix) instead of the cache; always regenerates")
    args = vars(parser.parse_args())
    out = args.pop("out")
    if out is None:
        print(ensure_checkpoint(**args))
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    print(write_checkpoint(out, **args))


if __name__ == "__main__":
    main()
