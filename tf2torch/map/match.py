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
from . import layouts, structure
from .layouts import Layout
from .names import LEAF_VOCABULARY, OUT_IN_KERNELS, Canonical, canonical_tf, canonical_torch, split_tf
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
    if leaf in ("original0", "weight_g") and rank == 3 and source.shape[::-1] == target.shape \
            and source.shape != target.shape:
        return layouts.TABLE["weight_norm_g"]
    if leaf != "weight":
        # a (1, n) row onto an (n,) vector: the same numbers (HF TF Conv1D biases)
        if rank == 2 and source.shape[0] == 1 and tuple(target.shape) == source.shape[1:]:
            return layouts.TABLE["squeeze_row"]
        if source.shape == (1,) and tuple(target.shape) == ():  # a scalar TF keeps as (1,)
            return layouts.TABLE["to_scalar"]
        if rank == 1 and tuple(target.shape) == (*source.shape, 1):  # a bias broadcast over (N, C, L)
            return layouts.TABLE["column"]
        if rank == 1 and tuple(target.shape) == (*source.shape, 1, 1):  # a scale over (N, C, H, W)
            return layouts.TABLE["column2d"]
        return layouts.IDENTITY
    # a parameter of a plain nn.Module (no torch layer to go by) holding the reversed 3-D kernel:
    # ConvBERT's grouped linear layer
    if kind == "Module" and rank == 3 and source.shape[::-1] == tuple(target.shape) != source.shape:
        return layouts.TABLE["grouped_dense"]
    if kind == "Linear" and rank == 2:
        tf_leaf = split_tf(source.name)[-1].lower() if split_tf(source.name) else ""
        # A Keras Dense names its (in, out) matrix "kernel"; a bare "weight" (an add_weight whose call
        # decides the orientation) already in the target's shape is kept: transformers' TF models store
        # those (out, in) (MobileBERT's head dense, RemBERT's decoder, IDEFICS' lm_head), and their
        # TF->PT loader transposed "kernel"s only.
        stored_out_in = tf_leaf in OUT_IN_KERNELS or (tf_leaf == "weight" and source.shape == tuple(target.shape))
        return layouts.IDENTITY if stored_out_in else layouts.TABLE["dense"]
    if kind == "Linear" and rank == 4 and source.shape[:2] == (1, 1):
        return layouts.TABLE["conv1x1_dense"]
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


def _suffix_scores(forms: list[Canonical], leafs: dict[str, list[str]], t_canon: dict[str, Canonical],
                   loose: bool) -> dict[str, int]:
    """Target key -> the length of the shared path suffix, for every key one of ``forms`` ends (or is the
    end of), compared literally or with word order ignored (``loose``)."""
    found: dict[str, int] = {}
    for form in (f.loose() if loose else f for f in forms):
        for key in leafs.get(form.leaf, ()):
            t = t_canon[key].loose().path if loose else t_canon[key].path
            if _is_suffix(t, form.path, form.leaf) or _is_suffix(form.path, t, form.leaf):
                found[key] = max(found.get(key, -1), min(len(t), len(form.path)))
    return found


# The leaves the vocabulary gives (weight, bias, running_mean, ...): what a parameter is, not which one
ROLE_LEAVES = frozenset(LEAF_VOCABULARY.values())


def _is_suffix(short: tuple, long: tuple, leaf: str) -> bool:
    if not short:
        # An empty path (a top-level name) ends every path. With a leaf of its own (``logit_scale``,
        # ``cls_token``) the leaf is the name that matches; with a role leaf (``output_weights`` read as a
        # ``weight``) nothing names the key, and it would pair with any ``*.weight`` left: not a match.
        return bool(long) and leaf not in ROLE_LEAVES
    return len(short) < len(long) and long[len(long) - len(short):] == short


class _Pending:
    """Sources still to place and targets still open, with their canonical forms."""

    def __init__(self, sources: list[Variable], canon: dict[str, list[Canonical]], targets: dict[str, TargetParam]):
        self.sources = sources
        self.canon = canon
        self.targets = targets
        self.t_canon = {k: canonical_torch(k) for k in targets}

    def by_leaf(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for key, c in self.t_canon.items():
            if key in self.targets:
                out[c.leaf].append(key)
        return out


def match(sources: Sequence[Variable], targets: Sequence[TargetParam], rules: Rules = NO_RULES,
          name_of: Callable[[Variable], str] | None = None, source_order: Sequence[str] | None = None
          ) -> MatchResult:
    """Match ``sources`` to ``targets``; ``name_of`` gives the name to match by (default: the variable's
    name), e.g. ``conv1/weight`` for a Keras 3 weight stored as ``layers/conv2d/vars/0``.

    Passes, each taking only pairs that are unique both ways: equal canonical names (literal, then
    with word order ignored), then the longest suffix (one name's path ends with the other's; the pair
    must be each other's single longest), then the structure of the two trees (``structure.py``;
    ``source_order``: the sources' creation order, when the source has one), then a unique
    (leaf, shape)."""
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

    canon: dict[str, list[Canonical]] = {}
    for src in pending:
        forms = canonical_tf(rules.rename(name_of(src)))
        if src.tf_name and src.tf_name != name_of(src):
            # a TF2 object-graph key also knows the variable's TF name (Keras layer names: the names
            # tf_model.h5 would have), a second form to meet by, after the key's own
            forms += [f for f in canonical_tf(rules.rename(src.tf_name)) if f not in forms]
        if not forms:
            result.unmatched[src.name] = "its name has no component to match (add a [pairs] rule)"
        else:
            canon[src.name] = forms
    pending = [s for s in pending if s.name in canon]
    state = _Pending(pending, canon, open_targets)
    reasons: dict[str, str] = {}

    def accept(pairs: dict[str, str], how: str) -> None:
        nonlocal pending
        by_name = {s.name: s for s in pending}
        for name, key in pairs.items():
            take(by_name[name], open_targets[key], how)
        pending = [s for s in pending if s.name not in pairs]

    def equal_pass(how: str, loose: bool) -> None:
        index: dict[Canonical, list[str]] = defaultdict(list)
        for key in open_targets:
            c = state.t_canon[key]
            index[c.loose() if loose else c].append(key)
        cands = {}
        for src in pending:
            keys: list[str] = []
            for form in canon[src.name]:
                keys += [k for k in index.get(form.loose() if loose else form, []) if k not in keys]
                if keys:
                    break  # the most literal form that meets anything decides
            cands[src.name] = keys
        accept(_unique_both_ways(cands, reasons), how)

    def suffix_pass() -> None:
        while True:
            leafs = state.by_leaf()
            scores: dict[str, dict[str, int]] = {}
            for src in pending:
                # word order counts where it tells keys apart (SAM's cross_attn_token_to_image and
                # cross_attn_image_to_token): the literal forms first, the loose ones only if they meet nothing
                found = _suffix_scores(canon[src.name], leafs, state.t_canon, loose=False) or \
                    _suffix_scores(canon[src.name], leafs, state.t_canon, loose=True)
                if found:
                    scores[src.name] = found
            best_of_target: dict[str, list[tuple[int, str]]] = defaultdict(list)
            for name, found in scores.items():
                for key, score in found.items():
                    best_of_target[key].append((score, name))
            taken: dict[str, str] = {}
            for name, found in scores.items():
                top = max(found.values())
                keys = [k for k, v in found.items() if v == top]
                if len(keys) != 1:
                    reasons[name] = f"ambiguous: {', '.join(sorted(keys)[:4])} all fit equally; add a [pairs] rule"
                    continue
                rivals = [n for v, n in best_of_target[keys[0]] if v >= top and n != name]
                if rivals:
                    reasons[name] = f"ambiguous: {keys[0]} also fits {', '.join(rivals[:3])}"
                    continue
                taken[name] = keys[0]
            if not taken:
                return
            accept(taken, "suffix")

    def shape_pass() -> None:
        leafs = state.by_leaf()
        cands = {src.name: [k for k in leafs.get(canon[src.name][0].leaf, ())
                            if _fits(src, open_targets[k], rules) == open_targets[k].shape] for src in pending}
        accept(_unique_both_ways(cands, reasons), "shape")

    def structure_pass() -> None:
        if not pending or not open_targets or structure.too_big(len(pending), len(open_targets)):
            return
        rank = {n: i for i, n in enumerate(source_order or ())}
        ordered = source_order is not None and all(s.name in rank for s in pending)
        items = sorted(pending, key=lambda v: rank[v.name]) if ordered else pending
        renamed = {v.name: rules.rename(name_of(v)) for v in pending}
        tree_s = structure.source_tree([(renamed[v.name], canon[v.name][0].leaf, v.shape) for v in items], ordered)
        by_renamed = {r: n for n, r in renamed.items()}
        tree_t = structure.torch_tree([(t.key, state.t_canon[t.key].leaf, t.shape, "Norm" in t.module_type)
                                       for t in targets if t.key in open_targets])
        found = structure.align(tree_s, tree_t, ordered)
        accept({by_renamed[n]: k for n, k in found.items() if n in by_renamed and k in open_targets}, "structure")

    equal_pass("name", loose=False)
    equal_pass("name", loose=True)
    suffix_pass()
    structure_pass()
    shape_pass()
    for src in pending:
        result.unmatched[src.name] = reasons.get(src.name, "no state_dict key matches its name or shape")
    result.missing = sorted(open_targets.values(), key=lambda t: t.key)
    return result


def _unique_both_ways(cands: dict[str, list[str]], reasons: dict[str, str]) -> dict[str, str]:
    """source -> target where the source has one candidate and no other source claims it."""
    claimed: dict[str, list[str]] = defaultdict(list)
    for name, keys in cands.items():
        for k in keys:
            claimed[k].append(name)
    taken = {}
    for name, keys in cands.items():
        if len(keys) == 1 and claimed[keys[0]] == [name]:
            taken[name] = keys[0]
        elif len(keys) > 1:
            reasons[name] = f"ambiguous: {', '.join(sorted(keys)[:4])} all fit; add a [pairs] rule"
        elif keys:
            reasons[name] = f"ambiguous: {keys[0]} also fits {', '.join(claimed[keys[0]][:3])}"
    return taken
