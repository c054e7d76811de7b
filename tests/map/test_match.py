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
