"""MultiHeadAttention against real Keras 3 (.keras, .h5) and Keras 2 (tf_keras .h5).

As in test_rnn: one model per file format with every case as a branch on shared inputs (query
(5, 6), value (7, 8), key (7, 9)), one test id per case and format.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.layers.test_rnn import Run, Runs, params
from tf2torch.errors import UnsupportedError
from tf2torch.layers import attention
from tf2torch.layers.base import Ctx, TensorInfo
from tf2torch.spec import LayerCall, LayerSpec, TensorRef

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# case id -> (layer options, how it is called: names of the inputs, positional then "key=" keyword)
CASES: dict[str, tuple[dict[str, Any], tuple[str, ...], dict[str, Any]]] = {
    "self": (dict(num_heads=2, key_dim=3), ("q", "q"), {}),
    "self-causal": (dict(num_heads=2, key_dim=3), ("q", "q"), dict(use_causal_mask=True)),
    "cross-key_dim4-value_dim2": (dict(num_heads=2, key_dim=4, value_dim=2), ("q", "v"), {}),
    "cross-key-keyword": (dict(num_heads=3, key_dim=3, value_dim=5), ("q", "v", "key=k"), {}),
    "cross-key-positional": (dict(num_heads=2, key_dim=2, value_dim=3), ("q", "v", "k"), {}),
    "cross-all-keywords": (dict(num_heads=2, key_dim=3), ("query=q", "value=v", "key=k"), {}),
    "cross-nobias-output_shape": (dict(num_heads=2, key_dim=3, use_bias=False, output_shape=10), ("q", "v"), {}),
    "cross-one-head": (dict(num_heads=1, key_dim=8), ("q", "v"), {}),
    "cross-attention-scores": (dict(num_heads=2, key_dim=3), ("q", "v"), dict(return_attention_scores=True)),
}
KERAS2 = tuple(CASES)  # tf_keras builds attention quickly: every case in Keras 2 as well
PARAMS, IDS = params(CASES, KERAS2)


def _branches(keras: Any, cases: list[str]) -> tuple[list[Any], dict[str, Any]]:
    tensors = {"q": keras.Input((5, 6), name="query_in"), "v": keras.Input((7, 8), name="value_in"),
               "k": keras.Input((7, 9), name="key_in")}
    branches = {}
    for case in cases:
        options, args, kwargs = CASES[case]
        layer = keras.layers.MultiHeadAttention(name=case.replace("-", "_"), **options)
        positional = [tensors[a] for a in args if "=" not in a]
        keywords = dict(a.split("=") for a in args if "=" in a)
        branches[case] = layer(*positional, **{k: tensors[v] for k, v in keywords.items()}, **kwargs)
    return list(tensors.values()), branches


@pytest.fixture(scope="session")
def mha_runs(tmp_path_factory) -> Runs:
    return Runs(tmp_path_factory.mktemp("mha"), _branches, CASES, KERAS2, seed=2)


@pytest.mark.parametrize(("fmt", "case"), PARAMS, ids=IDS)
def test_multi_head_attention(mha_runs: Runs, fmt: str, case: str) -> None:
    mha_runs(fmt).check(case)


def test_generated_code(mha_runs: Runs) -> None:
    run: Run = mha_runs("k3.keras")
    assert "class KerasMultiHeadAttention(nn.Module):" in run.source
    assert ("self.cross_key_keyword = KerasMultiHeadAttention(6, 9, 8, num_heads=3, key_dim=3, value_dim=5, "
            "output_dim=6)") in run.source
    assert "self.cross_key_keyword(query_in, value_in, key=key_in)" in run.source
    assert "self.self_causal(query_in, query_in, use_causal_mask=True)" in run.source
    assert "self.cross_all_keywords(query_in, value_in, key=key_in)" in run.source


# -- refusals, from hand-written configs (no TensorFlow needed) -------------------------------------

def _ctx(config: dict[str, Any], kwargs: dict[str, Any]) -> Ctx:
    refs = (TensorRef("q"), TensorRef("v"))
    refs += tuple(v for _, v in sorted(kwargs.items()) if isinstance(v, TensorRef))
    layer = LayerSpec("att", "MultiHeadAttention", {"num_heads": 2, "key_dim": 3, **config},
                      (LayerCall(refs, kwargs),))
    return Ctx(layer, layer.calls[0], (TensorInfo((5, 6)),) * len(refs))


@pytest.mark.parametrize(("config", "kwargs", "message"), [
    ({}, {"attention_mask": TensorRef("mask")}, "called with attention_mask"),
    ({"attention_axes": [1, 2]}, {}, r"attention_axes=\[1, 2\]"),
    ({"use_gate": True}, {}, "use_gate=True"),
    ({"sliding_window": 3}, {}, "sliding_window"),
], ids=["attention-mask", "attention-axes", "gate", "sliding-window"])
def test_refused(config: dict[str, Any], kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UnsupportedError, match=rf"layer 'att' \(MultiHeadAttention\): {message}"):
        attention.multi_head_attention(_ctx(config, kwargs))
