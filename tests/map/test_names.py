"""Name vocabulary and canonical forms: TF scopes and PyTorch keys meet in one form."""

import pytest

from tf2torch.map.names import bare_key, canonical_tf, canonical_torch, tokens


@pytest.mark.parametrize("a, b", [
    ("shortcut_conv", "convShortcut"),
    ("conv_1", "conv1"),
    ("BatchNorm", "batch_norm"),
    ("layer_0", "layer0"),
], ids=["snake-vs-camel", "underscore-digit", "camel-vs-snake", "digits"])
def test_components_with_the_same_words_are_equal(a, b):
    assert tokens(a) == tokens(b)


@pytest.mark.parametrize("tf_name, key", [
    ("block2.layer.0/shortcut_conv/DW", "block2.layer.0.convShortcut.weight"),
    ("block1.layer.0/bn1/BatchNorm/gamma", "block1.layer.0.bn1.weight"),
    ("bn1/BatchNorm/moving_variance", "bn1.running_var"),
    ("conv1.weight/DW", "conv1.weight"),  # a scope named after the parameter (seed 000)
    ("fc/biases", "fc.bias"),
    ("dense/kernel:0", "dense.weight"),
    ("embeddings/word_embeddings/embeddings", "embeddings.word_embeddings.weight"),
], ids=["shortcut", "bn-gamma", "bn-var", "scope-named-like-param", "biases", "keras2-suffix", "embeddings"])
def test_tf_names_meet_torch_keys(tf_name, key):
    assert canonical_tf(tf_name) == canonical_torch(key)


def test_unknown_leaf_has_no_canonical_form():
    assert canonical_tf("global_step") is None


@pytest.mark.parametrize("name, keep, key", [
    ("bert/encoder/layer_0/attention/self/query/kernel", False, "bert.encoder.layer_0.attention.self.query.weight"),
    ("resnet/conv1/BatchNorm/beta", False, "resnet.conv1.bias"),
    ("resnet/conv1/BatchNorm/beta", True, "resnet.conv1.BatchNorm.beta"),
    ("scope/custom_thing", False, "scope.custom_thing"),
], ids=["bert", "wrapper-scope-dropped", "keep-names", "unknown-leaf-kept"])
def test_bare_keys(name, keep, key):
    assert bare_key(name, keep) == key
