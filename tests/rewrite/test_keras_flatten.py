"""A Keras CNN with Flatten -> Dense (saved with its config) onto a naive PyTorch port, no rules: the
Flatten is found in the Keras config, the Linear's input checked on one forward pass, the rows
reordered; SAME from the config for the convs and, tied by position, for the pool. TF computes the
expected outputs (tf_keras, built at test time with seeded random weights and BN statistics)."""


import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.support.weights import Profile, randomise_keras
from tests.util import load_source, state_dict, to_torch_layout
from tf2torch import api

PORT = '''
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, channels_last_flatten=False):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2, 2, padding=0)
        self.conv2 = nn.Conv2d(8, 6, 3, padding=1)
        self.fc = nn.Linear(6 * 3 * 3, 5)
        self.channels_last_flatten = channels_last_flatten

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv1(x))))
        x = torch.relu(self.conv2(x))
        if self.channels_last_flatten:  # a careful port that flattens as Keras does
            x = x.permute(0, 2, 3, 1)
        return self.fc(torch.flatten(x, 1))


def careful():
    return Net(channels_last_flatten=True)
'''


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    keras = require_keras("tf_keras")
    L = keras.layers
    rng = np.random.default_rng(7)
    model = keras.Sequential([
        keras.Input((11, 11, 3)),
        L.Conv2D(8, 3, strides=2, padding="same", name="conv1"),
        L.BatchNormalization(name="bn"),
        L.ReLU(name="relu"),
        L.MaxPooling2D(2, padding="same", name="pool"),  # 6x6 -> 3x3
        L.Conv2D(6, 3, padding="same", activation="relu", name="conv2"),
        L.Dropout(0.5, name="drop"),
        L.Flatten(name="flatten"),
        L.Dense(5, name="fc"),
    ])
    randomise_keras(model, int(rng.integers(1 << 30)), Profile(spread=0.4))  # BN statistics too
    folder = tmp_path_factory.mktemp("keras_flatten")
    model.save(folder / "cnn.h5")
    x = rng.normal(size=(2, 11, 11, 3)).astype(np.float32)
    (folder / "port.py").write_text(PORT)
    return folder, x, model.predict(x, verbose=0)


@pytest.mark.parametrize("factory", ["Net", "careful"])
def test_keras_flatten_dense_onto_a_port_without_rules(saved, factory):
    folder, x, expected = saved
    result = api.convert(folder / "cnn.h5", None, dry_run=True, model=f"{folder / 'port.py'}:{factory}")
    layout = {e.key: e.layout for e in result.report.by_status("mapped")}["fc.weight"]
    assert ("rows HWC -> CHW" in layout) == (factory == "Net"), layout
    model = load_source(result.model_source, folder / "model.py")["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    with torch.no_grad():
        out = model.eval()(to_torch_layout(x))
    expected = torch.from_numpy(expected)
    diff = (out - expected).abs().max().item()
    print(f"Keras Flatten->Dense onto port {factory}: max abs diff {diff:.2e}, max |out| {expected.abs().max():.2f}")
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5 * expected.abs().max().item())
