"""The baseline: converting a TF1 checkpoint the usual way, with TensorFlow at hand.

    python benchmarks/baseline_tf.py PREFIX OUT.pt

``tf.train.load_checkpoint`` + ``get_tensor`` for every variable, the same names and transposes as
tf2torch's bare mode (kernel -> weight, gamma -> weight, beta -> bias; dense kernels transposed, conv
kernels permuted), then one ``torch.save`` of the state_dict.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import torch  # noqa: E402

LEAVES = {"kernel": "weight", "gamma": "weight", "beta": "bias", "bias": "bias"}
PERMUTATIONS = {2: (1, 0), 3: (2, 1, 0), 4: (3, 2, 0, 1), 5: (4, 3, 0, 1, 2)}


def convert(prefix: str, out: str) -> int:
    reader = tf.train.load_checkpoint(prefix)
    state = {}
    for name in sorted(reader.get_variable_to_shape_map()):
        if name == "global_step" or "/adam_" in name.lower():
            continue
        value = reader.get_tensor(name)
        *scopes, leaf = name.split("/")
        key = ".".join([*scopes, LEAVES.get(leaf, leaf)])
        if LEAVES.get(leaf) == "weight" and value.ndim in PERMUTATIONS:
            value = np.ascontiguousarray(np.transpose(value, PERMUTATIONS[value.ndim]))
        state[key] = torch.from_numpy(value)
    torch.save(state, out)
    return len(state)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.splitlines()[2].strip())
    convert(sys.argv[1], sys.argv[2])
