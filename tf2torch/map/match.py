"""Match source variables to the state_dict keys of a target PyTorch model — never by guessing.

Order of evidence: explicit pairs from the rules file, then equal canonical names (see ``names``), then
a unique suffix of canonical names, then a unique (leaf, shape) among what is left. A candidate is only
taken when it is the single one both ways; everything else is reported with the reason.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..spec import Variable
from . import layouts
from .layouts import Layout
from .names import Canonical, canonical_tf, canonical_torch
from .rules import NO_RULES, Rules

Shape = tuple[int, ...]


@dataclass(frozen=True)
class TargetParam:
    """One state_dict entry of the target model and the module that owns it."""

    key: str
    shape: Shape
    module_type: str  # "Conv2d", "Linear", "BatchNorm2d", ... ("" when unknown)
    groups: int = 1
    is_buffer: bool = False


@dataclass(frozen=True)
class Match:
    source: Variable
    target: TargetParam
    layout: Layout
    how: str  # "pair" | "name" | "suffix" | "shape"


@dataclass
class MatchResult:
    matches: list[Match] = field(default_factory=list)
    unmatched: dict[str, str] = field(default_factory=dict)  # source name -> reason
    missing: list[TargetParam] = field(default_factory=list)
    mismatched: list[tuple[Variable, TargetParam, Shape]] = field(default_factory=list)  # (src, tgt, got)


def layout_for(target: TargetParam, source: Variable, rules: Rules = NO_RULES) -> Layout:
    """The layout change that takes ``source`` to ``target``, chosen by the target module's type."""
    if target.key in rules.layouts:
        return rules.layouts[target.key]
    leaf = target.key.rsplit(".", 1)[-1]
    kind, rank = target.module_type, len(source.shape)
    if leaf != "weight":
        return layouts.IDENTITY
    if kind == "Linear" and rank == 2:
        return layouts.TABLE["dense"]
    if kind.startswith("ConvTranspose") and kind[-2:] in ("1d", "2d", "3d"):
        return layouts.TABLE[f"conv{kind[-2:]}_transpose"]
    if kind in ("Conv1d", "Conv2d", "Conv3d"):
        dims = kind[-2:]
        # A TF depthwise kernel (…, C, M) feeds a groups=C conv with one input channel per group.
        if dims in ("1d", "2d") and target.groups > 1 and target.shape[1] == 1 and source.shape[-2] == target.groups:
            return layouts.TABLE[f"depthwise{dims}"]
        return layouts.TABLE[f"conv{dims}"]
    return layouts.IDENTITY


def _fits(source: Variable, target: TargetParam, rules: Rules) -> Shape:
    """The shape ``source`` has after its layout change towards ``target``."""
    try:
        return layout_for(target, source, rules).out_shape(source.shape)
    except Exception:  # a reshape that cannot apply: report as a shape mismatch, not a crash
        return source.shape


def _is_suffix(short: tuple, long: tuple) -> bool:
    return len(short) < len(long) and long[len(long) - len(short):] == short


def match(sources: Sequence[Variable], targets: Sequence[TargetParam], rules: Rules = NO_RULES,
          name_of: Callable[[Variable], str] | None = None) -> MatchResult:
    """Match ``sources`` to ``targets``; ``name_of`` gives the name to match by (default: the variable's
    name), e.g. ``conv1/weight`` for a Keras 3 weight stored as ``layers/conv2d/vars/0``."""
    result = MatchResult()
    name_of = name_of or (lambda v: v.name)
    open_targets = {t.key: t for t in targets}
    pending: list[Variable] = []

    def take(src: Variable, tgt: TargetParam, how: str) -> None:
        del open_targets[tgt.key]
        got = _fits(src, tgt, rules)
        if got != tgt.shape:
            result.mismatched.append((src, tgt, got))
        else:
            result.matches.append(Match(src, tgt, layout_for(tgt, src, rules), how))

    for src in sources:
        pair = rules.pairs.get(src.name)
        if pair is None:
            pending.append(src)
        elif pair not in open_targets:
            result.unmatched[src.name] = f"the rules file pairs it with {pair!r}, which the model does not have"
        else:
            take(src, open_targets[pair], "pair")

    canon: dict[str, Canonical] = {}
    for src in pending:
        c = canonical_tf(rules.rename(name_of(src)))
        if c is None:
            result.unmatched[src.name] = "its leaf name is not in the vocabulary (add a [pairs] rule)"
        else:
            canon[src.name] = c
    pending = [s for s in pending if s.name in canon]

    reasons: dict[str, str] = {}

    def unique_pass(how: str, related) -> None:
        nonlocal pending
        t_canon = {k: canonical_torch(k) for k in open_targets}
        cands = {s.name: [k for k, tc in t_canon.items() if related(canon[s.name], tc, s, open_targets[k])]
                 for s in pending}
        claimed: dict[str, list[str]] = defaultdict(list)
        for name, keys in cands.items():
            for k in keys:
                claimed[k].append(name)
        left = []
        for src in pending:
            keys = cands[src.name]
            if len(keys) == 1 and claimed[keys[0]] == [src.name]:
                take(src, open_targets[keys[0]], how)
            else:
                left.append(src)
                if len(keys) > 1:
                    reasons[src.name] = f"ambiguous: {', '.join(sorted(keys)[:4])} all fit; add a [pairs] rule"
                elif keys:
                    reasons[src.name] = f"ambiguous: {keys[0]} also fits {', '.join(claimed[keys[0]][:3])}"
        pending = left

    unique_pass("name", lambda sc, tc, s, t: sc == tc)
    unique_pass("suffix", lambda sc, tc, s, t: sc.leaf == tc.leaf and
                (_is_suffix(sc.path, tc.path) or _is_suffix(tc.path, sc.path)))
    unique_pass("shape", lambda sc, tc, s, t: sc.leaf == tc.leaf and _fits(s, t, rules) == t.shape)
    for src in pending:
        result.unmatched[src.name] = reasons.get(src.name, "no state_dict key matches its name or shape")
    result.missing = sorted(open_targets.values(), key=lambda t: t.key)
    return result
