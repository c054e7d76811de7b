"""Shared test helpers. ``require_tf()``: TensorFlow or a skip, or a failure when CI demands TF.

Three lanes, chosen by environment variables:

* default (``pytest``): tests that need TensorFlow skip when it is missing;
* ``TF2TORCH_REQUIRE_TF=1`` (``make test``, CI): a missing TensorFlow is a failure, never a skip;
* ``TF2TORCH_FAST=1`` (``make test-fast``): no TensorFlow at all. Before any test module is collected,
  ``tensorflow``, ``keras``, ``tf_keras``, ``transformers``, ``keras_hub`` and ``tf_slim`` are blocked in
  ``sys.modules`` (importing them raises ``ImportError``); tests marked ``tf`` are deselected at
  collection and ``require_tf`` / ``require_keras`` / ``require_package`` skip with a "fast lane" reason.
  A test that imports one of those packages without ``require_*`` fails here: route it through them.
  At the end of the session the lane fails if any of them was imported after all.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

import pytest

FAST = os.environ.get("TF2TORCH_FAST") == "1"
# The packages the fast lane does without (TensorFlow and everything that imports it).
HEAVY = ("tensorflow", "keras", "tf_keras", "transformers", "keras_hub", "tf_slim")
FAST_SKIP = "needs TensorFlow/Keras: not in the fast lane (TF2TORCH_FAST=1); `make test` runs it"


def _loaded_heavy() -> list[str]:
    return sorted(name for name, module in sys.modules.items()
                  if module is not None and name.split(".")[0] in HEAVY)


if FAST:
    if _loaded_heavy():
        raise pytest.UsageError(f"TF2TORCH_FAST=1 but already imported before the tests: {_loaded_heavy()[:5]}")
    for _name in HEAVY:
        sys.modules[_name] = None  # `import tensorflow` now raises ImportError instead of taking ~10 s


def pytest_configure(config: pytest.Config) -> None:
    if FAST and os.environ.get("TF2TORCH_REQUIRE_TF") == "1":
        raise pytest.UsageError("TF2TORCH_FAST=1 and TF2TORCH_REQUIRE_TF=1 contradict each other; set one")


# The longest test files (minutes of CPU each), in that order: `make test` runs files on two workers
# (--dist loadfile), which take files in collection order; started first, the long ones do not end the run
# with one worker idle (longest-first scheduling: 10m53s -> under 10 min here).
LONGEST_FIRST = ("tests/layers/test_applications.py", "tests/hf/test_hf_corpus.py", "tests/corpus/test_tf_slim.py",
                 "tests/corpus/test_keras_hub.py", "tests/hf/test_hf_original.py", "tests/rewrite/test_conv_same.py",
                 "tests/rewrite/test_pool_same.py", "tests/test_fuzz_slice.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first (``LONGEST_FIRST``); in the fast lane, tests marked ``tf`` are deselected
    (reported as deselected, not skipped)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: order kept within
    if not FAST:
        return
    kept = [item for item in items if item.get_closest_marker("tf") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("tf") is not None])
        items[:] = kept


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The fast lane fails if TensorFlow (or a package that imports it) got into the process anyway."""
    if FAST and _loaded_heavy():
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"TF2TORCH_FAST=1 but these were imported: {_loaded_heavy()[:10]}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def require_tf() -> ModuleType:
    """Import TensorFlow; skip when it is missing, but fail under ``TF2TORCH_REQUIRE_TF=1`` (CI).
    In the fast lane (``TF2TORCH_FAST=1``) it always skips, and so do the two below (they call it first)."""
    if FAST:
        pytest.skip(FAST_SKIP)
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
