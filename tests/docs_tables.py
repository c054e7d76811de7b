"""The support lists in ``docs/layers.md``, generated from ``tf2torch layers`` so they cannot drift.

Each list sits in a fenced block between ``<!-- BEGIN tf2torch layers ARGS -->`` and ``<!-- END ... -->``
markers and holds exactly what the command prints. Regenerate after adding a converter, a TF op or a
keras-hub builder (``tests/test_docs.py`` fails until you do):

    PYTHONPATH=. python -m tests.docs_tables
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS_MD = ROOT / "docs" / "layers.md"
# the argument lists of `tf2torch layers` whose output docs/layers.md holds
COMMANDS = ((), ("--keras-hub",), ("--tf-ops",), ("--tflite-ops",), ("--tflite-int8-ops",), ("--tflite-int16-ops",),
            ("--tflite-uint8-ops",), ("--refused",))


def output(args: tuple[str, ...]) -> str:
    """What ``tf2torch layers ARGS`` prints, run in-process through click."""
    from click.testing import CliRunner

    from tf2torch.cli import main

    result = CliRunner().invoke(main, ["layers", *args])
    if result.exit_code != 0:
        raise RuntimeError(f"tf2torch layers {' '.join(args)} exited {result.exit_code}: {result.output}")
    return result.output


def _pattern(args: tuple[str, ...]) -> re.Pattern[str]:
    label = re.escape(" ".join(("tf2torch layers", *args)))
    return re.compile(rf"(<!-- BEGIN {label} -->\n```text\n)(.*?)(```\n<!-- END {label} -->)", re.S)


def blocks(text: str) -> dict[tuple[str, ...], str]:
    """The generated blocks found in ``text``, by argument list."""
    found = {}
    for args in COMMANDS:
        match = _pattern(args).search(text)
        if match is not None:
            found[args] = match.group(2)
    return found


def regenerate(text: str) -> str:
    for args in COMMANDS:
        pattern = _pattern(args)
        if not pattern.search(text):
            raise RuntimeError(f"docs/layers.md has no block for `tf2torch layers {' '.join(args)}`")
        body = output(args)
        text = pattern.sub(lambda m, body=body: m.group(1) + body + m.group(3), text)
    return text


if __name__ == "__main__":
    LAYERS_MD.write_text(regenerate(LAYERS_MD.read_text()))
    print(f"wrote {LAYERS_MD.relative_to(ROOT)}")
