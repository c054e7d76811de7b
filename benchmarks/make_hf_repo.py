"""Generate (once) the Hugging Face benchmark repository: ``config.json`` + a BERT-large-size ``tf_model.h5``.

    python benchmarks/make_hf_repo.py                 # prints the repository's path
    python benchmarks/make_hf_repo.py --layers 2 --out /tmp/small-repo

Written as a Hub repository is: transformers 4.x's own ``TFBertModel`` built from a ``BertConfig`` of
BERT-large size (24 layers, hidden 1024, intermediate 4096, vocab 30522: 335 M parameters, 1.34 GB), its
weights TensorFlow's random initialisation, then ``save_pretrained`` (one unsharded ``tf_model.h5``: 4.x's
default shard size for TF models is 10 GB). Cached in ``${XDG_CACHE_HOME:-~/.cache}/tf2torch-bench/``
beside the TF1 checkpoint of ``make_checkpoint.py``, reused while its parameters match.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from make_checkpoint import COMPLETE, cache_root

DEFAULTS = {"layers": 24, "hidden": 1024, "heads": 16, "intermediate": 4096, "vocab": 30522, "positions": 512}


def write_repo(out: Path, *, layers: int, hidden: int, heads: int, intermediate: int, vocab: int,
               positions: int) -> Path:
    """Build the TF model (random weights) and ``save_pretrained`` it into ``out``."""
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # transformers' TF classes are tf_keras (Keras 2) models
    import transformers

    config = transformers.BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                                     num_attention_heads=heads, intermediate_size=intermediate,
                                     max_position_embeddings=positions)
    model = transformers.TFBertModel(config)
    model(model.dummy_inputs, training=False)  # builds (and randomly initialises) every variable
    model.save_pretrained(out)
    return out


def ensure_repo(**params: int) -> Path:
    """The cached benchmark repository, generated first (in a subprocess: TF's memory goes with it)."""
    params = {**DEFAULTS, **params}
    tag = "hf-bert-{layers}l-{hidden}h-{intermediate}i-{vocab}v".format(**params)
    final = cache_root() / tag
    done = final / COMPLETE
    if done.is_file() and json.loads(done.read_text()) == params:
        return final / "repo"
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{tag}.", dir=final.parent))
    try:
        print(f"generating the Hugging Face benchmark repo in {final} (once; needs TF + transformers 4.x) ...",
              file=sys.stderr)
        args = [f"--{k}={v}" for k, v in params.items()]
        subprocess.run([sys.executable, __file__, *args, "--out", str(staging / "repo")], check=True)
        (staging / COMPLETE).write_text(json.dumps(params))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final / "repo"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for key, value in DEFAULTS.items():
        parser.add_argument(f"--{key}", type=int, default=value)
    parser.add_argument("--out", type=Path, help="write here instead of the cache; always regenerates")
    args = vars(parser.parse_args())
    out = args.pop("out")
    if out is None:
        print(ensure_repo(**args))
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    print(write_repo(out, **args))


if __name__ == "__main__":
    main()
