"""Every weight is checked against the torch module that will hold it while model.py is generated."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tf2torch.codegen.selfcheck import check_param, expected_shapes
from tf2torch.errors import UnsupportedError
from tf2torch.layers.base import Module

CASES = [
    Module("nn.Conv2d", (6, 8, (3, 1)), (("groups", 2), ("bias", True))),
    Module("nn.Conv1d", (4, 4, (5,)), (("groups", 4), ("bias", False))),
    Module("nn.ConvTranspose2d", (6, 4, (2, 2)), (("bias", True),)),
    Module("nn.Linear", (16, 3), (("bias", False),)),
    Module("nn.BatchNorm2d", (5,), (("eps", 0.001),)),
    Module("nn.LayerNorm", ((16,),), (("eps", 1e-5), ("elementwise_affine", True))),
    Module("nn.Embedding", (20, 8)),
]


@pytest.mark.parametrize("module", CASES, ids=[m.cls for m in CASES])
def test_the_table_says_what_torch_builds(module):
    ctor = getattr(nn, module.cls.removeprefix("nn."))
    built = ctor(*module.args, **dict(module.kwargs))
    expected = expected_shapes(module)
    print(module.cls, expected)
    assert expected == {k: tuple(v.shape) for k, v in built.state_dict().items()}


def test_a_weight_of_another_shape_is_refused_naming_the_key():
    norm = Module("nn.LayerNorm", ((16,),), (("elementwise_affine", True),))
    check_param(norm, "weight", (16,), "ln1.weight")
    with pytest.raises(UnsupportedError, match=r"ln1\.weight: nn\.LayerNorm holds it as \[16\], the weight is \[1, 16\]"):
        check_param(norm, "weight", (1, 16), "ln1.weight")  # the (1, C) gamma of an exported layer norm
    with pytest.raises(UnsupportedError, match="has no parameter 'bias'"):
        check_param(Module("nn.Linear", (4, 2), (("bias", False),)), "bias", (2,), "fc.bias")
    check_param(Module("KerasRescaling", (3, 1)), "scale", (7,), "x.scale")  # helpers: not in the table
    assert torch.__version__  # the table is checked against this torch above
