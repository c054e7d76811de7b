"""The matcher takes only unambiguous matches and says why it left the rest."""

import numpy as np

from tf2torch import dtypes
from tf2torch.map.match import TargetParam, match
from tf2torch.map.rules import Rules
from tf2torch.spec import Variable

F32 = dtypes.by_name("float32")


def var(name, shape):
    return Variable(name, F32, tuple(shape), 4 * int(np.prod(shape)), loader=lambda: np.zeros(shape, "f4"))


def target(key, shape, kind):
    return TargetParam(key, tuple(shape), kind)


def test_names_shapes_and_layouts():
    sources = [var("features/conv/weights", (3, 3, 3, 8)), var("head/dense/kernel", (8, 2))]
    targets = [target("features.conv.weight", (8, 3, 3, 3), "Conv2d"), target("head.dense.weight", (2, 8), "Linear")]
    result = match(sources, targets)
    assert {(m.source.name, m.target.key, m.layout.name) for m in result.matches} == {
        ("features/conv/weights", "features.conv.weight", "conv2d"),
        ("head/dense/kernel", "head.dense.weight", "dense"),
    }
    assert not result.unmatched and not result.missing


def test_suffix_match_when_the_checkpoint_has_an_extra_top_scope():
    result = match([var("resnet_model/fc/DW", (4, 2))], [target("fc.weight", (2, 4), "Linear")])
    assert [m.how for m in result.matches] == ["suffix"]


def test_unique_shape_match_when_names_differ():
    result = match([var("logits/kernel", (4, 3))], [target("classifier.weight", (3, 4), "Linear")])
    assert [(m.target.key, m.how) for m in result.matches] == [("classifier.weight", "structure")]  # the only group


def test_ambiguous_shapes_are_reported_not_guessed():
    sources = [var("a/kernel", (4, 4)), var("b/kernel", (4, 4))]
    targets = [target("x.weight", (4, 4), "Linear"), target("y.weight", (4, 4), "Linear")]
    result = match(sources, targets)
    assert not result.matches
    assert set(result.unmatched) == {"a/kernel", "b/kernel"}
    assert all("ambiguous" in reason for reason in result.unmatched.values())
    assert [t.key for t in result.missing] == ["x.weight", "y.weight"]


def test_rules_pairs_settle_ambiguity():
    sources = [var("a/kernel", (4, 4)), var("b/kernel", (4, 4))]
    targets = [target("x.weight", (4, 4), "Linear"), target("y.weight", (4, 4), "Linear")]
    rules = Rules(pairs={"a/kernel": "y.weight", "b/kernel": "x.weight"})
    result = match(sources, targets, rules)
    assert {(m.source.name, m.target.key, m.how) for m in result.matches} == {
        ("a/kernel", "y.weight", "pair"), ("b/kernel", "x.weight", "pair")}


def test_shape_mismatch_is_reported_with_both_shapes():
    result = match([var("fc/kernel", (5, 2))], [target("fc.weight", (2, 4), "Linear")])
    assert [(s.name, t.key, got) for s, t, got in result.mismatched] == [("fc/kernel", "fc.weight", (2, 5))]


def test_depthwise_kernel_goes_to_a_grouped_conv():
    t = TargetParam("dw.weight", (16, 1, 3, 3), "Conv2d", groups=8)
    result = match([var("dw/depthwise_kernel", (3, 3, 8, 2))], [t])
    assert [m.layout.name for m in result.matches] == ["depthwise2d"]


def _unit(order):
    """A ResNet unit: shortcut and conv3 are both 1x1 64 -> 256; slim creates the shortcut first."""
    sources = [var(f"unit/{n}/weights", s) for n, s in order]
    return sources, [s.name for s in sources]


def test_structure_pairs_same_shaped_siblings_by_name_not_by_creation_order():
    sources, order = _unit([("shortcut", (1, 1, 64, 256)), ("conv1", (1, 1, 64, 16)), ("conv3", (1, 1, 16, 256)),
                            ("conv4", (1, 1, 64, 256))])
    targets = [target("block.conv1.weight", (16, 64, 1, 1), "Conv2d"), target("block.conv3.weight", (256, 16, 1, 1), "Conv2d"),
               target("block.conv4.weight", (256, 64, 1, 1), "Conv2d"),
               target("block.downsample.0.weight", (256, 64, 1, 1), "Conv2d")]
    result = match(sources, targets, source_order=order)
    pairs = {m.source.name: m.target.key for m in result.matches}
    print(pairs)
    assert pairs["unit/conv4/weights"] == "block.conv4.weight"  # by its name, not by position
    assert pairs["unit/shortcut/weights"] == "block.downsample.0.weight"  # the one left over


def test_same_shaped_siblings_with_no_telling_names_are_not_paired():
    sources, order = _unit([("a", (1, 1, 64, 256)), ("b", (1, 1, 64, 256))])
    targets = [target("block.x.weight", (256, 64, 1, 1), "Conv2d"), target("block.y.weight", (256, 64, 1, 1), "Conv2d")]
    result = match(sources, targets, source_order=order)
    assert not result.matches and len(result.missing) == 2


def test_branches_registered_in_another_order_are_not_swapped_silently():
    """Two branches start with same-shaped convs; the port registers them in the other order. Pairing
    by position would cross them (each branch's first conv into the other branch); the structure check
    refuses, so nothing is paired by structure and the conversion fails loudly instead."""
    shapes = {"Branch_1/c0": (1, 1, 8, 4), "Branch_1/c1": (1, 7, 4, 4),
              "Branch_2/c0": (1, 1, 8, 4), "Branch_2/c1": (1, 7, 4, 4), "Branch_2/c2": (7, 1, 4, 6)}
    sources = [var(f"mixed/{n}/weights", s) for n, s in shapes.items()]
    targets = [target("block.x.0.weight", (4, 8, 1, 1), "Conv2d"), target("block.x.1.weight", (4, 4, 1, 7), "Conv2d"),
               target("block.x.2.weight", (6, 4, 7, 1), "Conv2d"),  # x is the source's Branch_2
               target("block.y.0.weight", (4, 8, 1, 1), "Conv2d"), target("block.y.1.weight", (4, 4, 1, 7), "Conv2d")]
    result = match(sources, targets, source_order=[s.name for s in sources])
    pairs = {m.source.name: m.target.key for m in result.matches}
    print(pairs)
    assert not any(k.startswith("block.x.") and "Branch_1" in n for n, k in pairs.items())
    assert not any(k.startswith("block.y.") and "Branch_2" in n for n, k in pairs.items())


def test_a_top_level_name_is_no_suffix_of_every_key():
    """``output_weights`` has no path: an empty path ends every key, which would pair it with the one
    ``*.weight`` left by structure alone. Two sources fit ``classifier.weight`` equally: neither is taken."""
    sources = [var("output_weights", (2, 32)), var("foo/kernel", (32, 2))]
    result = match(sources, [target("classifier.weight", (2, 32), "Linear")])
    assert not result.matches, [(m.source.name, m.how) for m in result.matches]
    assert set(result.unmatched) == {"output_weights", "foo/kernel"}
    assert [t.key for t in result.missing] == ["classifier.weight"]


def test_a_top_level_name_of_its_own_still_matches_by_that_name():
    """A top-level leaf that is a name (``logit_scale``), not a role (``weight``), is the evidence itself."""
    result = match([var("top/dual_encoder/logit_scale", (1,))], [target("logit_scale", (1,), "")])
    assert [(m.target.key, m.how) for m in result.matches] == [("logit_scale", "suffix")]


def test_transformers_layouts_scalar_column_grouped_and_separable():
    """CLIP's (1,) logit_scale onto a 0-d parameter; ConvBERT's separable conv (depthwise and pointwise
    kernels onto two Conv1d, its (C,) bias onto a (C, 1) parameter) and grouped linear layer
    ((O/g, I/g, g) onto (g, I/g, O/g) of a plain Module): each layout also moves the numbers right."""
    sources = [var("clip/logit_scale", (1,)),
               var("att/sep/depthwise_kernel", (3, 32, 1)), var("att/sep/pointwise_kernel", (1, 32, 16)),
               var("att/sep/bias", (16,)), var("ffn/dense/kernel", (19, 16, 2))]
    targets = [target("logit_scale", (), ""),
               TargetParam("att.sep.depthwise.weight", (32, 1, 3), "Conv1d", groups=32),
               target("att.sep.pointwise.weight", (16, 32, 1), "Conv1d"), target("att.sep.bias", (16, 1), "Module"),
               target("ffn.dense.weight", (2, 16, 19), "Module")]
    result = match(sources, targets)
    layouts = {m.target.key: m.layout.name for m in result.matches}
    assert layouts == {"logit_scale": "to_scalar", "att.sep.depthwise.weight": "depthwise1d",
                       "att.sep.pointwise.weight": "conv1d", "att.sep.bias": "column",
                       "ffn.dense.weight": "grouped_dense"}, (layouts, result.unmatched)
    grouped = next(m for m in result.matches if m.target.key == "ffn.dense.weight").layout
    kernel = np.arange(19 * 16 * 2, dtype="f4").reshape(19, 16, 2)
    # TF multiplies by transpose(kernel, [2, 1, 0]); PyTorch's GroupedLinearLayer by its weight as stored
    assert np.array_equal(grouped.apply(kernel), kernel.transpose(2, 1, 0))


def test_a_bare_weight_in_the_targets_shape_is_not_transposed():
    """transformers' TF add_weight matrices are stored (out, in) (MobileBERT's head dense (16, 99) onto
    Linear(99, 16)); a Dense's kernel of the same shape is (in, out) and is transposed."""
    result = match([var("predictions/dense/weight", (16, 99)), var("head/kernel", (8, 8))],
                   [target("predictions.dense.weight", (16, 99), "Linear"), target("head.weight", (8, 8), "Linear")])
    assert {m.target.key: m.layout.name for m in result.matches} == {"predictions.dense.weight": "identity",
                                                                      "head.weight": "dense"}
