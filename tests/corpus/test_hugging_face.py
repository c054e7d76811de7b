"""Hugging Face TF models onto their own PyTorch twins, from ``tf_model.h5`` (``save_pretrained``) and from
a ``tf.train.Checkpoint`` (object-graph names, e.g. ``model/bert/encoder/layer/0/attention/dense_output``), with
no rules and no flags beyond ``--model``: the port is the user's two lines (``AutoConfig`` from the saved
config, the PyTorch class). TensorFlow computes the expected outputs.

What each model exercises: BERT (``layer_._0`` indices), ALBERT (one layer group shared by every layer),
ELECTRA (an embedding projection), MobileViT (BatchNorm statistics, like ResNet), GPT-2 (Conv1D: (1, n) biases), T5 (one
embedding saved in three groups; tied in PyTorch), ViT (``cls_token`` / ``position_embeddings``
leaves), ResNet (BatchNorm statistics, which HF's own TF->PT loader leaves unloaded), ConvNeXt
(``layer_scale_parameter``; a top-level ``layernorm`` beside nested ones), Swin
(``relative_position_bias_table``; ``relative_position_index`` stored by TF), Wav2Vec2 (weight norm
``weight_g``/``weight_v`` onto ``parametrizations``, ``masked_spec_embed``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.corpus.conftest import randomise_tf, require_transformers
from tests.support.numerics import check, float64_drift
from tests.util import load_source, state_dict
from tf2torch import api

SMALL_TEXT = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
IMAGE = ("pixel_values", (2, 3, 32, 32))
TEXT = ("input_ids", (2, 7))
CASES = {
    "bert": ("BertConfig", "BertModel", dict(SMALL_TEXT, max_position_embeddings=64), TEXT),
    "gpt2": ("GPT2Config", "GPT2Model", dict(vocab_size=99, n_embd=32, n_layer=2, n_head=4, n_positions=64), TEXT),
    "t5": ("T5Config", "T5EncoderModel", dict(vocab_size=99, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4),
           TEXT),
    "vit": ("ViTConfig", "ViTModel", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                          intermediate_size=37, image_size=32, patch_size=8), IMAGE),
    "resnet": ("ResNetConfig", "ResNetModel", dict(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 2],
                                                   layer_type="bottleneck"), IMAGE),
    "convnext": ("ConvNextConfig", "ConvNextModel", dict(hidden_sizes=[8, 16], depths=[1, 2], num_stages=2), IMAGE),
    "swin": ("SwinConfig", "SwinModel", dict(image_size=32, patch_size=4, embed_dim=8, depths=[1, 1],
                                             num_heads=[2, 2], window_size=4), IMAGE),
    "albert": ("AlbertConfig", "AlbertModel", dict(SMALL_TEXT, embedding_size=16, max_position_embeddings=64), TEXT),
    "electra": ("ElectraConfig", "ElectraModel", dict(SMALL_TEXT, embedding_size=16, max_position_embeddings=64),
                TEXT),
    "mobilevit": ("MobileViTConfig", "MobileViTModel", dict(image_size=32, patch_size=2, hidden_sizes=[16, 24, 32],
                                                             neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 32],
                                                             num_attention_heads=2), IMAGE),
    "wav2vec2": ("Wav2Vec2Config", "Wav2Vec2Model", dict(
        vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
        conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4), ("input_values", (2, 800))),
}
PORT = '''import transformers


def build():
    return transformers.{cls}(transformers.AutoConfig.from_pretrained({folder!r}))
'''


def _inputs(name: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 99, shape).astype(np.int64) if name == "input_ids" else rng.normal(size=shape).astype(np.float32)


@pytest.fixture(scope="module", params=sorted(CASES))
def saved(request, tmp_path_factory):
    transformers = require_transformers()
    config_cls, torch_cls, kwargs, (input_name, shape) = CASES[request.param]
    folder = tmp_path_factory.mktemp(request.param)
    config = getattr(transformers, config_cls)(**kwargs)
    tf_model = getattr(transformers, "TF" + torch_cls)(config)
    x = _inputs(input_name, shape, seed=1)
    tf_model({input_name: x}, training=False)  # builds the variables
    randomise_tf(tf_model, seed=2)
    expected = tf_model({input_name: x}, training=False).last_hidden_state.numpy()
    tf_model.save_pretrained(folder)  # tf_model.h5 + config.json, as on the Hub
    import tensorflow as tf

    checkpoint = tf.train.Checkpoint(model=tf_model).save(str(folder / "ckpt" / "ckpt"))  # object-graph names
    (folder / "port.py").write_text(PORT.format(cls=torch_cls, folder=str(folder)))
    sources = {"tf_model.h5": folder / "tf_model.h5", "tf.train.Checkpoint": Path(checkpoint)}
    return request.param, folder, sources, {input_name: x}, expected


@pytest.mark.parametrize("source", ["tf_model.h5", "tf.train.Checkpoint"])
def test_hugging_face_tf_onto_the_pytorch_twin_with_no_rules(saved, source):
    name, folder, sources, inputs, expected = saved
    result = api.convert(sources[source], None, dry_run=True, model=f"{folder / 'port.py'}:build")
    counts = result.report.counts()
    model = load_source(result.model_source, folder / "model.py")["build_model"]()
    missing = model.load_state_dict(state_dict(result.plans), strict=False).missing_keys
    allowed = {e.key for e in result.report.by_status("missing")}
    assert set(missing) <= allowed  # only keys the report accounts for as harmless (tied tensors)
    (feed,) = [torch.from_numpy(v) for v in inputs.values()]  # one input: the forward's first argument
    with torch.no_grad():
        out = model.eval()(feed).last_hidden_state.numpy()
    print(counts)
    drift = float64_drift(model, [feed], lambda out: out.last_hidden_state)
    check(out, expected, f"{name}: {source} -> transformers PyTorch twin, no rules", drift)
