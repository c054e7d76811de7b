"""Llama's rotary options tf2torch refuses, each by name (the ones it converts are ``test_keras_hub.py``'s
``llama3*`` cases, checked against keras-hub's outputs).

- ``rope_position_scaling_factor`` other than 1: keras-hub 0.32 ignores it for Llama while earlier releases
  scaled the positions by it, so the file alone does not say what it computes;
- Llama 3.1's smoothing with only some of its four arguments (keras-hub refuses to build such a model);
- smoothing values no Llama uses, where keras-hub's formulas divide by zero or lose their bands: a
  high-frequency factor not above the low one, a factor or length not positive.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.corpus.keras_hub_cases import LLM
from tests.corpus.test_keras_hub import keras_hub
from tests.util import edit_keras_member
from tf2torch.cli import EXIT_ERROR, main

SMOOTHING = dict(rope_frequency_adjustment_factor=8.0, rope_low_freq_factor=1.0, rope_high_freq_factor=4.0,
                 rope_pretraining_sequence_length=8192)


def _refused(path: Path, out: Path, *words: str) -> None:
    result = CliRunner().invoke(main, ["convert", str(path), "-o", str(out)])
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR and not out.exists()
    assert all(word in result.stderr for word in words), words


def _saved(tmp_path: Path, **kwargs: Any) -> Path:
    path = tmp_path / "llama3.keras"
    keras_hub().models.Llama3Backbone(**LLM, vocabulary_size=50, **kwargs).save(path)
    return path


def test_a_position_scaling_factor_is_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path, rope_position_scaling_factor=2.0, **SMOOTHING)
    _refused(path, tmp_path / "out", "rope_position_scaling_factor=2.0", "keras-hub 0.32 ignores it")


@pytest.mark.parametrize("edit, words", [
    ({"rope_frequency_adjustment_factor": None}, ("rope_low_freq_factor", "all of")),
    ({"rope_high_freq_factor": 1.0}, ("rope_high_freq_factor=1.0", "not above")),
    ({"rope_low_freq_factor": -1.0}, ("'rope_low_freq_factor' should be a positive number",)),
])
def test_partial_or_degenerate_smoothing_is_refused(tmp_path: Path, edit: dict[str, Any],
                                                     words: tuple[str, ...]) -> None:
    edited = edit_keras_member(_saved(tmp_path, **SMOOTHING), tmp_path / "edited.keras", "config.json",
                               lambda c: {**c, "config": {**c["config"], **edit}})
    _refused(edited, tmp_path / "out", *words)
