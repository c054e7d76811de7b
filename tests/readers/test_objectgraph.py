"""TF2 object-based checkpoints: names from the object graph, roles, slots, bit-exact values."""

from __future__ import annotations

import pytest

from tests.readers import tablebuilder as tb
from tests.readers.conftest import assert_bit_exact, tf_value
from tf2torch.errors import FormatError
from tf2torch.readers.checkpoint import read_checkpoint, read_object_graph
from tf2torch.readers.objectgraph import VALUE_SUFFIX, ObjectGraph, escape
from tf2torch.spec import Format, Role

KERAS3_WEIGHTS = {
    "model/_operations/1/_kernel": "c1/kernel", "model/_operations/1/bias": "c1/bias",
    "model/_operations/2/gamma": "bn/gamma", "model/_operations/2/beta": "bn/beta",
    "model/_operations/2/moving_mean": "bn/moving_mean", "model/_operations/2/moving_variance": "bn/moving_variance",
    "model/_operations/4/_kernel": "d/kernel", "model/_operations/4/bias": "d/bias",
}
TF_KERAS_WEIGHTS = {
    "model/layer_with_weights-0/kernel": "c1/kernel", "model/layer_with_weights-0/bias": "c1/bias",
    "model/layer_with_weights-1/gamma": "bn/gamma", "model/layer_with_weights-1/beta": "bn/beta",
    "model/layer_with_weights-1/moving_mean": "bn/moving_mean",
    "model/layer_with_weights-1/moving_variance": "bn/moving_variance",
    "model/layer_with_weights-2/kernel": "d/kernel", "model/layer_with_weights-2/bias": "d/bias",
}
CASES = {"keras3": ("tf2_keras3", KERAS3_WEIGHTS), "tf_keras": ("tf2_tf_keras", TF_KERAS_WEIGHTS)}


def by_role(spec, role):
    return {v.name: v for v in spec if v.role is role}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_weights_named_by_model_path(request, case):
    fixture, weights = CASES[case]
    spec = read_checkpoint(request.getfixturevalue(fixture))
    assert spec.format is Format.TF2_CHECKPOINT
    assert {n: v.tf_name for n, v in by_role(spec, Role.WEIGHT).items()} == weights


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_values_bit_exact_by_checkpoint_key(request, tf, case):
    prefix = request.getfixturevalue(CASES[case][0])
    spec = read_checkpoint(prefix)
    for key, info in read_object_graph(prefix).variables().items():
        var = spec[info.name]
        assert_bit_exact(var.read(), tf_value(tf, prefix, key), var.dtype.name)


def test_keras3_weights_are_keyed_under_the_optimizer(tf2_keras3):
    """Keras 3: trainable weights are tracked by the optimizer (``_trainable_variables``) too; TF keys
    them by the shorter optimizer path, we name them by the path through the model."""
    info = {v.name: v for v in read_object_graph(tf2_keras3).variables().values()}
    assert info["model/_operations/1/_kernel"].key == "optimizer/_trainable_variables/0" + VALUE_SUFFIX
    assert info["model/_operations/2/moving_mean"].key == "model/_operations/2/moving_mean" + VALUE_SUFFIX


def test_keras3_slots_belong_to_their_weights(tf2_keras3):
    slots = {v.note for v in read_checkpoint(tf2_keras3) if v.role is Role.OPTIMIZER and "slot" in v.note}
    assert "optimizer slot 'momentums' of model/_operations/1/_kernel" in slots
    assert "optimizer slot 'velocities' of model/_operations/4/bias" in slots
    assert len(slots) == 12


def test_tf_keras_slots_matched_by_tf_name(tf2_tf_keras):
    spec = read_checkpoint(tf2_tf_keras)
    notes = [v.note for v in by_role(spec, Role.OPTIMIZER).values()]
    assert "optimizer slot 'Adam/m/c1/kernel' of model/layer_with_weights-0/kernel" in notes
    assert sum("slot" in n for n in notes) == 12 and len(notes) == 14  # + iterations, learning rate


def test_legacy_slot_variables(tf, tf2_legacy_slots):
    spec = read_checkpoint(tf2_legacy_slots)
    slot = spec["model/layer_with_weights-0/kernel/.OPTIMIZER_SLOT/optimizer/m"]
    assert slot.role is Role.OPTIMIZER and slot.note == "optimizer slot 'm' of model/layer_with_weights-0/kernel"
    assert spec["optimizer/iter"].role is Role.OPTIMIZER
    key = "model/layer_with_weights-0/kernel/.OPTIMIZER_SLOT/optimizer/m" + VALUE_SUFFIX
    assert_bit_exact(slot.read(), tf_value(tf, tf2_legacy_slots, key), "float32")


@pytest.mark.parametrize("fixture", ["tf2_keras3", "tf2_tf_keras", "tf2_legacy_slots"])
def test_bookkeeping(request, fixture):
    spec = read_checkpoint(request.getfixturevalue(fixture))
    assert set(by_role(spec, Role.BOOKKEEPING)) == {"save_counter", "_CHECKPOINTABLE_OBJECT_GRAPH"}


def test_graph_is_a_plain_navigable_value(tf2_keras3):
    graph = read_object_graph(tf2_keras3)
    layer = graph.resolve("model/_operations/1")
    assert [name for name, _ in graph.nodes[layer].children] == ["_kernel", "bias"]
    kernel = graph.child(layer, "_kernel")
    assert graph.nodes[kernel].attributes[0].full_name == "c1/kernel"
    assert graph.resolve("model/no_such_thing") is None
    assert graph.optimizers() == {graph.resolve("optimizer")}


def test_escape_matches_tf():
    assert escape("a.b/c") == "a..b.Sc"


def test_dangling_node_id():
    node = tb.field(1, tb.field(1, 5) + tb.field(2, b"child"))  # child node 5 of a 1-node graph
    with pytest.raises(FormatError, match="refers to a node outside 0..0"):
        ObjectGraph.decode(tb.field(1, node), "ckpt _CHECKPOINTABLE_OBJECT_GRAPH")

