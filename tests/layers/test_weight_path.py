"""Weight names as path segments (``layers/common.weight_path``), the one rule every binder uses: only TF's
output suffix (``:0``, at the end) is dropped. A TFLite layer named after a model output keeps its colon
(``StatefulPartitionedCall_1:4_int16``); cutting at the first colon left ``StatefulPartitionedCall_1`` as the
weight's leaf, and binding by Keras name refused the layer."""

from __future__ import annotations

import numpy as np
import pytest

from tf2torch.dtypes import by_name
from tf2torch.layers.common import weight_path
from tf2torch.spec import Variable


def _var(name: str, tf_name: str = "") -> Variable:
    return Variable(name, by_name("float32"), (1,), 4, lambda: np.zeros(1, np.float32), tf_name=tf_name)


@pytest.mark.parametrize(("name", "tf_name", "path"), [
    ("conv1/kernel:0", "", ["conv1", "kernel"]),
    ("layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE", "dense/kernel:0", ["dense", "kernel"]),
    ("vars/0", "dense/vars/0", ["dense", "vars", "0"]),
    ("x", "StatefulPartitionedCall_1:4_int16/kernel", ["StatefulPartitionedCall_1:4_int16", "kernel"]),
    ("x", "StatefulPartitionedCall_1:41/bias", ["StatefulPartitionedCall_1:41", "bias"]),
    ("x", "StatefulPartitionedCall_1:4", ["StatefulPartitionedCall_1"]),  # an output suffix at the end only
], ids=["h5", "object-graph", "keras3-numbered", "tflite-output-int16", "tflite-output-int8", "suffix-only"])
def test_weight_path(name, tf_name, path):
    assert weight_path(_var(name, tf_name)) == path
