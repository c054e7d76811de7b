"""The runtime library (codegen/library.py): one registry of what model.py files carry, dependencies
computed from the sources, a name defined twice refused, families found without a list."""

from __future__ import annotations

from pathlib import Path

import pytest

from tf2torch.codegen import library

ROOT = Path(library.__file__).resolve().parents[1]  # tf2torch/


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_name_defined_in_two_files_fails(tmp_path: Path) -> None:
    a = _write(tmp_path / "runtime" / "a.py", "class Norm:\n    pass\n")
    b = _write(tmp_path / "families" / "x" / "y" / "runtime.py", "def Norm():\n    return 1\n")
    assert library.runtime_files(tmp_path) == [a, b]
    with pytest.raises(library.RuntimeLibraryError, match="'Norm' is defined in .*a.py:1 and in .*runtime.py:1"):
        library.build_registry(library.runtime_files(tmp_path))


def test_the_real_library_has_no_duplicates_and_covers_every_runtime_file() -> None:
    defs = library.registry()
    files = {d.path for d in defs.values()}
    assert ROOT / "runtime" / "weights.py" in files and ROOT / "runtime" / "userfile.py" in files
    assert ROOT / "families" / "keras_hub" / "llm" / "runtime.py" in files
    assert files == set(library.runtime_files())


def test_the_closure_is_computed_from_the_sources(tmp_path: Path) -> None:
    path = _write(tmp_path / "runtime" / "m.py", "LIMIT = 3\n\n\nclass Base:\n    n = LIMIT\n\n\n"
                  "class Block(Base):\n    pass\n\n\ndef unused():\n    return 0\n")
    defs = library.build_registry([path])
    assert library.closure(["Block"], defs) == ["LIMIT", "Base", "Block"]
    assert library.closure(["LIMIT", "Base", "Block"], defs) == ["LIMIT", "Base", "Block"]  # closed: unchanged
    with pytest.raises(library.RuntimeLibraryError, match="no runtime definition named 'Missing'"):
        library.closure(["Missing"], defs)


def test_a_helper_brings_what_it_is_built_from() -> None:
    got = library.closure(["KerasHubDeiTEncoder"])
    assert got == ["KerasMultiHeadAttention", "KerasHubViTBlock", "KerasHubViTEncoder", "KerasHubDeiTEncoder"]
    assert library.closure(["read_weights", "fuse"]) == ["_SAFETENSORS_DTYPES", "read_weights", "fuse"]
    source = "\n".join(library.inline(got))
    assert source.count("class KerasMultiHeadAttention(") == 1


def test_every_family_is_found_by_walking_the_package() -> None:
    from tf2torch.families import keras_hub
    from tf2torch.families.keras_hub.common import args

    builders = keras_hub.load("builder")
    folders = {p.parent.name for p in (ROOT / "families" / "keras_hub").glob("*/builder*.py")}
    assert {name.split(".")[-2] for name in builders} == folders
    assert "BertBackbone" in args.supported() and "MobileNetBackbone" in args.supported()
    assert any(name.endswith("mobilenet.converters") for name in keras_hub.load("converters"))


def test_mobilenet_helpers_carry_the_builders_batch_norm_constants() -> None:
    """The builder writes keras-hub's module constants into the graph; the generated blocks hard-code them."""
    from tf2torch.families.keras_hub.mobilenet.builder import BN_EPSILON, BN_MOMENTUM
    from tf2torch.families.keras_hub.mobilenet.runtime import KerasHubConvBnActBlock

    block = KerasHubConvBnActBlock(4, 8, "relu")
    assert (block.bn.eps, 1 - block.bn.momentum) == pytest.approx((BN_EPSILON, BN_MOMENTUM))
