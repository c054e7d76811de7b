"""Name-based roles of TF1 variables: optimizer slots, EMA shadows, bookkeeping, weights."""

from __future__ import annotations

import pytest

from tf2torch.readers.roles import classify_tf1
from tf2torch.spec import Role


@pytest.mark.parametrize(("name", "role", "note"), [
    ("conv/kernel", Role.WEIGHT, ""),
    ("conv/kernel/Adam", Role.OPTIMIZER, "Adam slot 'm' of conv/kernel"),
    ("conv/kernel/Adam_1", Role.OPTIMIZER, "Adam slot 'v' of conv/kernel"),
    ("x/RMSProp_1", Role.OPTIMIZER, "RMSProp slot 'momentum' of x"),
    ("x/Momentum", Role.OPTIMIZER, "Momentum slot 'momentum' of x"),
    ("x/Ftrl_1", Role.OPTIMIZER, "Ftrl slot 'linear' of x"),
    ("beta2_power_1", Role.OPTIMIZER, "Adam beta power accumulator (optimizer state)"),
    ("training/Adam/Variable_3", Role.OPTIMIZER, "optimizer state under 'training' (Keras-style name)"),
    ("global_step", Role.BOOKKEEPING, "bookkeeping counter 'global_step'"),
    ("dropout/seed_generator_state", Role.BOOKKEEPING, "bookkeeping counter 'seed_generator_state'"),
    ("w/ExponentialMovingAverage", Role.EMA, "ExponentialMovingAverage shadow of w"),
    ("bn/mean/ExponentialMovingAverage/biased", Role.EMA, "ExponentialMovingAverage shadow of bn/mean"),
    ("bn/moving_mean", Role.WEIGHT, ""),
    # mesh-TF Adafactor (T5): factored second moments and the unfactored one
    ("encoder/block_000/layer_000/SelfAttention/q_slot_vr", Role.OPTIMIZER,
     "Adafactor slot 'vr' of encoder/block_000/layer_000/SelfAttention/q (mesh-TF style)"),
    ("shared/embedding_slot_vc", Role.OPTIMIZER, "Adafactor slot 'vc' of shared/embedding (mesh-TF style)"),
    ("encoder/final_layer_norm/scale_slot_v", Role.OPTIMIZER,
     "Adafactor slot 'v' of encoder/final_layer_norm/scale (mesh-TF style)"),
    ("my_slot_value", Role.WEIGHT, ""),
], ids=lambda v: v if isinstance(v, str) else None)
def test_tf1_name_roles(name, role, note):
    assert classify_tf1(name) == (role, note)
