"""The baseline of the Hugging Face benchmark: transformers 4.x's own TF -> PyTorch route.

    python benchmarks/hf_baseline.py REPO OUT

The PyTorch class of the repository's architecture, loaded the way ``from_pretrained(REPO, from_tf=True)``
loads it (``load_tf2_checkpoint_in_pytorch_model``: it builds the TF model too and copies every weight
across, so TensorFlow and both models are in memory), then ``save_pretrained(OUT)``: what a user with
transformers < 5 and TensorFlow installed does today.

Not ``from_pretrained(from_tf=True)`` itself: in transformers 4.57.6 it builds the model on the meta device
and the TF weights' copy into it is a no-op (torch warns "copying from a non-meta parameter ... to a meta
parameter"; ``low_cpu_mem_usage=False`` changes nothing), so ``save_pretrained`` then fails with "Cannot copy
out of meta tensor". The function it calls is called here directly, on the class built from the config
(random initialisation included, as ``from_pretrained`` did before meta-device loading).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # transformers' TF classes are tf_keras (Keras 2) models


def convert(repo: str, out: str) -> None:
    import transformers

    architecture = json.loads((Path(repo) / "config.json").read_text())["architectures"][0]
    cls = getattr(transformers, architecture.removeprefix("TF"))
    model = cls(transformers.AutoConfig.from_pretrained(repo))
    transformers.load_tf2_checkpoint_in_pytorch_model(model, str(Path(repo) / "tf_model.h5"))
    model.save_pretrained(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.splitlines()[2].strip())
    convert(sys.argv[1], sys.argv[2])
