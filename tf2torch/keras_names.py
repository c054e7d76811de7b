"""Keras's own naming rules, used both where files are read (weight groups named after classes) and where
keras-hub graphs are rebuilt (auto-named layers): a value-level helper with no dependencies."""

from __future__ import annotations

import re


def snake_case(class_name: str, keras_version: int) -> str:
    """The group name Keras derives from a class name (``naming.to_snake_case``)."""
    if keras_version == 2:  # tf_keras generic_utils.to_snake_case: digits join the word before them
        name = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", class_name)
        name = re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()
        return name if not name.startswith("_") else "private" + name
    name = re.sub(r"\W+", "", class_name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()
