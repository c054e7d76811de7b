"""Shared test helpers. ``require_tf()``: TensorFlow or a skip, or a failure when CI demands TF."""

from __future__ import annotations

import os
from types import ModuleType

import pytest


def require_tf() -> ModuleType:
    """Import TensorFlow; skip when it is missing, but fail under ``TF2TORCH_REQUIRE_TF=1`` (CI)."""
    try:
        import tensorflow
    except ImportError as exc:
        if os.environ.get("TF2TORCH_REQUIRE_TF") == "1":
            pytest.fail(f"TF2TORCH_REQUIRE_TF=1 but TensorFlow cannot be imported ({exc}); "
                        "install it with: pip install -e '.[tf]'")
        pytest.skip("TensorFlow is not installed (pip install -e '.[tf]')")
    return tensorflow


def require_keras(module: str = "keras") -> ModuleType:
    """Import ``keras`` (Keras 3) or ``tf_keras`` (Keras 2); skips or fails exactly like ``require_tf``."""
    require_tf()
    try:
        return __import__(module)
    except ImportError as exc:
        if os.environ.get("TF2TORCH_REQUIRE_TF") == "1":
            pytest.fail(f"TF2TORCH_REQUIRE_TF=1 but {module} cannot be imported ({exc}); install it with: pip install -e '.[tf]'")
        pytest.skip(f"{module} is not installed (pip install -e '.[tf]')")


def require_package(module: str, extra: str = "test") -> ModuleType:
    """Import a package of an extra (the third-party corpus: transformers, tf_slim, keras_hub); skips
    or fails exactly like ``require_tf``."""
    require_tf()
    try:
        return __import__(module)
    except ImportError as exc:
        if os.environ.get("TF2TORCH_REQUIRE_TF") == "1":
            pytest.fail(f"TF2TORCH_REQUIRE_TF=1 but {module} cannot be imported ({exc}); "
                        f"install the {extra} extra: pip install -e '.[tf,dev,{extra}]'")
        pytest.skip(f"{module} is not installed (pip install -e '.[{extra}]')")
