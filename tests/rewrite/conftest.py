"""Fixtures for the SAME-padding tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="package")
def one_torch_thread():
    """The tensors here are tiny: a second OpenMP thread only adds hand-off cost, and on a busy
    2-core machine (TensorFlow's threads, other jobs) a tiny conv then takes ~30 ms instead of ~10 us."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
