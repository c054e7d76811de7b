"""Every SAME module inside a small conv net passes torch.export (static and dynamic spatial sizes),
leaves state_dict keys alone, and runs from its inlined source without tf2torch."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.export import Dim, export

from tf2torch.rewrite import modules
from tf2torch.rewrite.modules import (
    INLINE_CLASSES,
    INLINE_IMPORTS,
    Crop,
    SamePad,
    SamePool,
    inline_source,
)
from tf2torch.rewrite.same import plan_same
from tf2torch.rewrite.same_torch import conv_pad_spec, pool_specs
from tf2torch.rewrite.same_transpose import tf_same_transpose_padding
from tf2torch.runtime.apply import build_module

CONV = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
SAMPLE = {1: 10, 2: 10, 3: 8}  # spatial size of the export sample per ndim
OTHER_SIZES = {1: (7, 8, 9, 11, 12, 13), 2: (7, 8, 9, 11, 12, 13), 3: (7, 9, 10)}  # every parity, mod 3


def conv_net(ndim: int, *middle: nn.Module, channels: int = 4) -> nn.Module:
    """1x1 conv -> the modules under test -> 1x1 conv, so the SAME module sits inside a conv net."""
    torch.manual_seed(0)
    out_channels = next((m.out_channels for m in reversed(middle) if hasattr(m, "out_channels")), channels)
    return nn.Sequential(
        CONV[ndim](2, channels, 1), *middle, nn.ReLU(), CONV[ndim](out_channels, 3, 1)
    ).eval()


def conv_same(ndim, size, kernel, stride, groups=1):
    """A TF-SAME conv as its plan spells it: (pad module or nothing, conv with the planned padding)."""
    kernel, strides = (kernel,) * ndim, (stride,) * ndim
    plan = plan_same(size, kernel, strides)
    spec = conv_pad_spec(plan, kernel, strides, (1,) * ndim)
    conv = CONV[ndim](4, 8, kernel, stride, padding=plan.padding, groups=groups)
    return (conv,) if spec is None else (build_module(*spec), conv)


def pool_same(size, kernel, stride, kind):
    """A TF-SAME pool as patched models build it (apply.build_module on the plan's specs)."""
    strides = (stride,) * len(kernel)
    return tuple(build_module(*spec) for spec in pool_specs(plan_same(size, kernel, strides, kind=kind), kernel, strides))


def transpose_same(ndim, kernel, stride):
    kernel = (kernel,) * ndim
    plan = tf_same_transpose_padding(kernel, stride)
    transposed = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}[ndim](
        4, 6, kernel, stride, padding=plan.padding, output_padding=plan.output_padding
    )
    return (transposed,) if plan.crop is None else (transposed, Crop(plan.crop))


def size_of(ndim):
    return (SAMPLE[ndim],) * ndim


# (id, ndim, the modules between the two 1x1 convs, is the SAME part size-independent / dynamic?)
NETS = [
    ("conv2d-static-zeropad", 2, conv_same(2, size_of(2), 3, 2), False),
    ("conv2d-static-folded", 2, conv_same(2, size_of(2), 3, 1), True),
    ("conv1d-dynamic-samepad", 1, conv_same(1, None, 3, 2), True),
    ("conv2d-dynamic-samepad", 2, conv_same(2, None, 4, 3), True),
    ("conv3d-dynamic-samepad", 3, conv_same(3, None, 3, 2), True),
    ("depthwise2d-dynamic-samepad", 2, conv_same(2, None, 3, 2, groups=4), True),
    ("depthwise2d-static-zeropad", 2, conv_same(2, size_of(2), 3, 2, groups=4), False),
    ("maxpool2d-static-asymmetric", 2, pool_same(size_of(2), (3, 3), 2, "max"), False),
    ("maxpool2d-static-folded", 2, pool_same((9, 9), (3, 3), 2, "max"), False),
    ("maxpool1d-dynamic", 1, pool_same(None, (3,), 2, "max"), True),
    ("maxpool2d-dynamic", 2, pool_same(None, (2, 2), 3, "max"), True),
    ("maxpool3d-dynamic", 3, pool_same(None, (3, 3, 3), 2, "max"), True),
    ("avgpool2d-static-folded", 2, pool_same((9, 9), (3, 3), 2, "avg"), False),
    ("avgpool1d-static-asymmetric", 1, pool_same(size_of(1), (3,), 2, "avg"), False),
    ("avgpool2d-static-asymmetric", 2, pool_same(size_of(2), (3, 3), 2, "avg"), False),
    ("avgpool3d-static-asymmetric", 3, pool_same(size_of(3), (3, 3, 3), 3, "avg"), False),
    ("avgpool1d-dynamic", 1, pool_same(None, (3,), 2, "avg"), True),
    ("avgpool2d-dynamic", 2, pool_same(None, (3, 2), 2, "avg"), True),
    ("avgpool3d-dynamic", 3, pool_same(None, (3, 3, 3), 3, "avg"), True),
    ("convtranspose1d-crop", 1, transpose_same(1, 3, 2), True),
    ("convtranspose2d-crop", 2, transpose_same(2, 3, 2), True),
    ("convtranspose2d-output-padding", 2, transpose_same(2, 1, 3), True),
    ("convtranspose3d-crop", 3, transpose_same(3, 5, 2), True),
]
NET_IDS = [name for name, *_ in NETS]
DYNAMIC_NETS = [net for net in NETS if net[3]]


def sample(ndim: int, size: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(2, 2, *(size,) * ndim, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(("name", "ndim", "middle", "dynamic"), NETS, ids=NET_IDS)
def test_export_static_shapes(name, ndim, middle, dynamic):
    model = conv_net(ndim, *middle)
    x = sample(ndim, SAMPLE[ndim])
    program = export(model, (x,))
    got, expected = program.module()(x), model(x)
    print(f"{name}: exported vs eager max abs diff {(got - expected).abs().max().item():.2e}")
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    ("name", "ndim", "middle", "dynamic"), DYNAMIC_NETS, ids=[n for n, *_ in DYNAMIC_NETS]
)
def test_export_dynamic_shapes(name, ndim, middle, dynamic):
    """Spatial dims exported as symbols; the one program then serves sizes of every parity.

    ``min=6``: torch.export specialises sizes that may be 0 or 1, so every output size in the range
    must be >= 2 (with ``min=2`` export fails with "Constraints violated ... != 1").
    """
    model = conv_net(ndim, *middle)
    dims = {2 + i: Dim(f"d{i}", min=6, max=64) for i in range(ndim)}
    exported = export(model, (sample(ndim, SAMPLE[ndim]),), dynamic_shapes=(dims,)).module()
    worst = 0.0
    for other in OTHER_SIZES[ndim]:  # the shapes one exported program must serve
        x = sample(ndim, other, seed=other)
        got, expected = exported(x), model(x)
        worst = max(worst, (got - expected).abs().max().item())
        torch.testing.assert_close(got, expected, atol=1e-6, rtol=0, msg=lambda m, n=other: f"size {n}: {m}")
    print(f"{name}: exported vs eager max abs diff {worst:.2e} over sizes {OTHER_SIZES[ndim]}")


ALL_MODULES = {
    "SamePad": SamePad((3, 3), (2, 2), (1, 1)),
    "SamePool-max-dynamic": SamePool((3, 3), (2, 2), "max"),
    "SamePool-avg-dynamic": SamePool((3, 3), (2, 2), "avg"),
    "SamePool-avg-static": SamePool((3, 3), (2, 2), "avg", pad=(0, 1, 0, 1)),
    "Crop": Crop((0, 1, 0, 1)),
}


@pytest.mark.parametrize("module", list(ALL_MODULES.values()), ids=list(ALL_MODULES))
def test_modules_add_no_state(module):
    """No parameters and no buffers: adding the module to a model leaves its state_dict keys unchanged."""
    base = nn.Sequential(nn.Conv2d(2, 3, 3))
    patched = nn.Sequential(module, nn.Conv2d(2, 3, 3))
    assert list(module.parameters()) == [] and list(module.buffers()) == [] and module.state_dict() == {}
    assert list(patched.state_dict()) == [k.replace("0.", "1.", 1) for k in base.state_dict()]


def test_inlined_source_runs_without_tf2torch():
    source = "\n".join(INLINE_IMPORTS) + "\n\n\n" + inline_source()
    assert "tf2torch" not in source
    namespace: dict = {"__name__": "generated_model"}
    exec(compile(source, "generated_model.py", "exec"), namespace)  # only torch is imported
    assert set(INLINE_CLASSES) <= set(namespace)
    x = sample(2, 9)
    for name, original in ALL_MODULES.items():
        cls = namespace[type(original).__name__]
        copy = cls(*_ctor_args(original))
        torch.testing.assert_close(copy(x), original(x), atol=0, rtol=0, msg=lambda m, n=name: f"{n}: {m}")
        assert copy.state_dict() == {}


def _ctor_args(module):
    if isinstance(module, SamePad):
        return module.kernel_size, module.stride, module.dilation
    if isinstance(module, SamePool):
        return module.kernel_size, module.stride, module.mode, module.pad
    return (module.crop,)


def test_inline_source_rejects_unknown_names():
    with pytest.raises(modules.UsageError, match="ZeroPad2d"):
        inline_source("ZeroPad2d")
