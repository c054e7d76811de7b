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
    assert canonical_tf(tf_name)[0].loose() == canonical_torch(key).loose()


@pytest.mark.parametrize("tf_name, key", [
    ("tf_bert_model/bert/encoder/layer_._0/output/dense/kernel:0", "encoder.layer.0.output.dense.weight"),
    ("bert/encoder/layer_11/attention/self/query/bias", "encoder.layer.11.attention.self.query.bias"),
    ("model/layer_with_weights-3/kernel", "3.weight"),  # onto an nn.Sequential entry
    ("vit/embeddings/cls_token:0", "embeddings.cls_token"),
    ("bert/embeddings/word_embeddings", "embeddings.word_embeddings.weight"),  # Google BERT: the table itself
    ("pos_conv_embed/conv/weight_g:0", "pos_conv_embed.conv.parametrizations.weight.original0"),
    ("pos_conv_embed/conv/weight_v:0", "pos_conv_embed.conv.weight_v"),
], ids=["hf-index", "google-bert-index", "keras-autoname", "raw-leaf", "leaf-as-module", "weight-norm-g",
        "weight-norm-v-old-api"])
def test_zoo_names_meet_in_one_of_their_forms(tf_name, key):
    target = canonical_torch(key)
    forms = canonical_tf(tf_name)
    assert any(f.path[-len(target.path):] == target.path and f.leaf == target.leaf for f in forms), forms


def test_word_order_is_kept_where_it_tells_layers_apart():
    """TF-slim inception's 1x3 and 3x1 convs differ only in token order."""
    a, b = canonical_tf("Mixed_6b/Conv2d_0b_1x3/weights")[0], canonical_tf("Mixed_6b/Conv2d_0b_3x1/weights")[0]
    assert a != b and a == canonical_torch("Mixed_6b.Conv2d_0b_1x3.weight")


def test_a_name_with_no_component_has_no_canonical_form():
    assert canonical_tf("/") == []


@pytest.mark.parametrize("name, keep, key", [
    ("bert/encoder/layer_0/attention/self/query/kernel", False, "bert.encoder.layer_0.attention.self.query.weight"),
    ("resnet/conv1/BatchNorm/beta", False, "resnet.conv1.bias"),
    ("resnet/conv1/BatchNorm/beta", True, "resnet.conv1.BatchNorm.beta"),
    ("scope/custom_thing", False, "scope.custom_thing"),
], ids=["bert", "wrapper-scope-dropped", "keep-names", "unknown-leaf-kept"])
def test_bare_keys(name, keep, key):
    assert bare_key(name, keep) == key
