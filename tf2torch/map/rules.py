"""The rules file: how a user settles what automatic matching cannot (TOML, documented in docs/rules.md).

    [[rename]]              # regex rewrites of source names, applied in order before matching
    pattern = "^resnet_model/"
    replace = ""

    [pairs]                 # explicit source name -> state_dict key; wins over everything
    "fc/DW" = "classifier.weight"

    [skip]                  # source names (regex search) left out on purpose
    patterns = ["^aux_head/"]

    [layouts]               # force a layout for a state_dict key: a layout-table kind, or
    "fc.weight" = "dense_after_flatten:7,7,64"   # dense_after_flatten:<spatial...>,<channels>

    [padding]               # per-module TF padding override for --model rewrites: "same" | "valid"
    "stem.conv" = "valid"

    [epsilon]               # --model: the TF epsilon of a norm module, where the source has no evidence
    "encoder.norm" = 1e-3
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from . import layouts
from .layouts import Layout


@dataclass(frozen=True)
class Rules:
    renames: tuple[tuple[re.Pattern[str], str], ...] = ()
    pairs: dict[str, str] = field(default_factory=dict)
    skips: tuple[re.Pattern[str], ...] = ()
    layouts: dict[str, Layout] = field(default_factory=dict)
    padding: dict[str, str] = field(default_factory=dict)
    epsilon: dict[str, float] = field(default_factory=dict)
    source: str = ""  # the file it came from, for messages

    def rename(self, name: str) -> str:
        for pattern, replace in self.renames:
            name = pattern.sub(replace, name)
        return name

    def skipped(self, name: str) -> bool:
        return any(p.search(name) for p in self.skips)


NO_RULES = Rules()


def parse_layout(spec: str, where: str) -> Layout:
    """``conv2d`` / ``dense`` / ... or ``dense_after_flatten:H,W,C`` (spatial sizes, then channels)."""
    kind, _, args = spec.partition(":")
    if kind == "dense_after_flatten":
        try:
            sizes = tuple(int(v) for v in args.split(","))
        except ValueError:
            sizes = ()
        if len(sizes) < 2 or min(sizes) <= 0:
            raise UsageError(f"{where}: expected 'dense_after_flatten:<spatial...>,<channels>' "
                             f"with positive sizes, found {spec!r}")
        return layouts.dense_after_flatten(sizes[:-1], sizes[-1])
    if kind not in layouts.TABLE or args:
        raise UsageError(f"{where}: unknown layout {spec!r}; use one of {', '.join(sorted(layouts.TABLE))} "
                         "or dense_after_flatten:<spatial...>,<channels>")
    return layouts.TABLE[kind]


def _regex(text: object, where: str) -> re.Pattern[str]:
    if not isinstance(text, str):
        raise UsageError(f"{where}: expected a regex string, found {type(text).__name__}")
    try:
        return re.compile(text)
    except re.error as exc:
        raise UsageError(f"{where}: invalid regex {text!r}: {exc}") from None


def _str_table(data: dict, section: str, where: str) -> dict[str, str]:
    table = data.get(section, {})
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise UsageError(f"{where}: [{section}] must map names to strings")
    return dict(table)


def load_rules(path: Path) -> Rules:
    where = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{where}: cannot read the rules file ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where}: not a valid TOML rules file ({exc}); see docs/rules.md") from None
    unknown = sorted(set(data) - {"rename", "pairs", "skip", "layouts", "padding", "epsilon"})
    if unknown:
        raise UsageError(f"{where}: unknown section(s) {', '.join(unknown)}; "
                         "expected rename, pairs, skip, layouts, padding, epsilon")
    epsilon = data.get("epsilon", {})
    if not isinstance(epsilon, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in epsilon.values()):
        raise UsageError(f"{where}: [epsilon] must map module paths to positive numbers, e.g. \"bn1\" = 1e-3")
    renames = []
    for i, rule in enumerate(data.get("rename", [])):
        if not isinstance(rule, dict) or set(rule) != {"pattern", "replace"}:
            raise UsageError(f"{where}: [[rename]] #{i + 1} needs exactly 'pattern' and 'replace'")
        renames.append((_regex(rule["pattern"], f"{where} [[rename]] #{i + 1}"), str(rule["replace"])))
    skip = data.get("skip", {})
    patterns = skip.get("patterns", []) if isinstance(skip, dict) else None
    if not isinstance(patterns, list):
        raise UsageError(f"{where}: [skip] patterns must be a list of regex strings")
    padding = _str_table(data, "padding", where)
    bad = sorted(k for k, v in padding.items() if v not in ("same", "valid"))
    if bad:
        raise UsageError(f"{where}: [padding] values must be 'same' or 'valid' (see {', '.join(bad)})")
    return Rules(
        renames=tuple(renames),
        pairs=_str_table(data, "pairs", where),
        skips=tuple(_regex(p, f"{where} [skip]") for p in patterns),
        layouts={k: parse_layout(v, f"{where} [layouts] {k!r}") for k, v in _str_table(data, "layouts", where).items()},
        padding=padding,
        epsilon={k: float(v) for k, v in epsilon.items()},
        source=where,
    )
