"""MultiHeadAttention on masked inputs (Embedding(mask_zero=True)): Keras 3 reads the query's and the
value's masks itself, with nothing in the config saying so, so a conversion that ignored them computed
other numbers with exit 0. Against real Keras 3, on ids with padding and one sequence all padding (each
query masked: zero weights in Keras's masked softmax, uniform ones in its fused path, which a layer
without dropout takes). Keras 2 (tf_keras) on masked inputs is refused by name.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.util import convert_in_memory, edit_keras_member

IDS = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 0]], "int32")
OTHER = np.array([[7, 0, 0, 0], [1, 2, 3, 4], [5, 6, 0, 0]], "int32")  # the values' ids (cross attention)
CASES = {
    "self": (dict(num_heads=2, key_dim=4), False, {}),
    "self-dropout": (dict(num_heads=2, key_dim=4, dropout=0.1), False, {}),
    "self-causal": (dict(num_heads=2, key_dim=4), False, dict(use_causal_mask=True)),
    "cross": (dict(num_heads=2, key_dim=3, value_dim=5), True, {}),
    "cross-dropout": (dict(num_heads=2, key_dim=3, dropout=0.2), True, {}),
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """One model, a branch per case; each attention reads embeddings of its own (Keras clears the masks of
    the tensors an attention reads), plus a post-norm transformer block with its residual Add."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras()
    keras.utils.set_random_seed(3)
    ids, other = keras.Input((6,), dtype="int32", name="ids"), keras.Input((4,), dtype="int32", name="other")
    outputs = []
    for case, (options, cross, kwargs) in CASES.items():
        x = keras.layers.Embedding(20, 8, mask_zero=True)(ids)
        y = keras.layers.Embedding(20, 6, mask_zero=True)(other) if cross else x
        outputs.append(keras.layers.MultiHeadAttention(name=case.replace("-", "_"), **options)(x, y, **kwargs))
    x = keras.layers.Embedding(20, 8, mask_zero=True)(ids)  # the block: LayerNorm(x + attention(x, x)) -> Dense
    block = keras.layers.LayerNormalization()(keras.layers.Add()([x, keras.layers.MultiHeadAttention(2, 4)(x, x)]))
    outputs.append(keras.layers.Dense(3)(block))
    model = keras.Model([ids, other], outputs)
    path = tmp_path_factory.mktemp("masked_mha") / "masked.keras"
    model.save(path)
    expected = [np.asarray(o) for o in keras.saving.load_model(path)([IDS, OTHER])]
    return path, expected


@pytest.mark.parametrize("index", range(len(CASES) + 1), ids=[*CASES, "transformer-block"])
def test_masked_attention_matches_keras(saved, index: int) -> None:
    path, expected = saved
    model, _ = convert_in_memory(path)
    with torch.no_grad():
        got = model(torch.from_numpy(IDS), torch.from_numpy(OTHER))[index].numpy()
    error = float(np.abs(got - expected[index]).max())
    print(f"{[*CASES, 'transformer-block'][index]}: max abs error {error:.2e}")
    assert error <= 1e-5


def test_masks_are_passed_in_the_generated_code(saved) -> None:
    _, result = convert_in_memory(saved[0])
    assert "query_mask=" in result.model_source and "value_mask=" in result.model_source
    assert "uniform_when_masked=True" in result.model_source  # the layers without dropout


def test_keras2_attention_on_masked_inputs_is_refused(tmp_path) -> None:
    from tf2torch import api
    from tf2torch.errors import UnsupportedError

    keras = require_keras("tf_keras")
    ids = keras.Input((6,), dtype="int32")
    x = keras.layers.Embedding(20, 8, mask_zero=True)(ids)
    model = keras.Model(ids, keras.layers.MultiHeadAttention(2, 4, name="mha")(x, x))
    path = tmp_path / "keras2.h5"
    model.save(path)
    with pytest.raises(UnsupportedError, match="'mha'.*MultiHeadAttention on masked inputs.*saved by 2") as info:
        api.convert(path, None, dry_run=True)
    print(info.value)


def test_two_attentions_reading_one_masked_tensor_are_refused(tmp_path) -> None:
    from tf2torch import api
    from tf2torch.errors import UnsupportedError

    keras = require_keras()
    ids = keras.Input((6,), dtype="int32")
    x = keras.layers.Embedding(20, 8, mask_zero=True)(ids)
    a = keras.layers.MultiHeadAttention(2, 4, name="first")(x, x)
    b = keras.layers.MultiHeadAttention(2, 4, name="second")(x, x)
    path = tmp_path / "shared.keras"
    keras.Model(ids, [a, b]).save(path)
    with pytest.raises(UnsupportedError, match="clears that tensor's mask") as info:
        api.convert(path, None, dry_run=True)
    print(info.value)


def test_masked_attention_saved_before_keras_3_10_is_refused(saved, tmp_path) -> None:
    """Keras < 3.10 gave fully masked rows (padded queries) uniform weights where later versions give
    zeros: a file that says it was saved by Keras 3.8 is refused, not converted with 3.15's semantics."""
    from tf2torch import api
    from tf2torch.errors import UnsupportedError

    old = edit_keras_member(saved[0], tmp_path / "keras38.keras", "metadata.json",
                            lambda m: {**m, "keras_version": "3.8.0"})
    with pytest.raises(UnsupportedError, match="saved by 3.8: Keras computes padded positions differently") as info:
        api.convert(old, None, dry_run=True)
    print(info.value)
