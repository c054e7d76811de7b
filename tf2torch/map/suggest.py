"""``--suggest-rules``: the smallest rules file that settles what matching left open.

From a failed conversion's report: every source variable nothing took and every key left missing
with the same role and the same sizes (up to layout) is a candidate pair. Each candidate says how
the source's scopes would have to be renamed to meet the key by name; indices that agree on both
sides become a group (``layer_(\\d+)`` -> ``blocks/\\1``), so one ``[[rename]]`` covers a whole family.
A rename is proposed only when every variable it renames then meets exactly one open key by name,
and no two variables meet the same key; largest families first. What is left is proposed as
``[pairs]`` where one candidate is the only one both ways, and otherwise listed in comments, never
guessed. The proposal is plain TOML for the user to read, keep or edit.
"""

from __future__ import annotations

import re
from collections import defaultdict

from .account import Report
from .names import canonical_tf, canonical_torch, split_tf, tokens


def _dims(shape) -> tuple[int, ...]:
    return tuple(sorted(d for d in shape if d != 1))


def _family(scopes: list[str], prefix: list[str]) -> tuple[str, str]:
    """(regex, replacement) turning the source scopes ``scopes`` into the key prefix ``prefix``;
    digit runs found in the same order on both sides become groups."""
    src, dst = "/".join(scopes), "/".join(prefix)
    src_digits, dst_digits = re.findall(r"\d+", src), re.findall(r"\d+", dst)
    pattern, replace = re.escape(src), dst.replace("\\", "\\\\")
    if src_digits and src_digits == dst_digits:
        pattern = re.sub(r"\d+", r"(\\d+)", re.escape(src))
        parts = re.split(r"\d+", dst)
        replace = "".join(p + (f"\\{i + 1}" if i < len(src_digits) else "") for i, p in enumerate(parts))
    return f"^{pattern}/", f"{replace}/" if replace else ""


def _candidates(report: Report) -> dict[str, list[str]]:
    missing = report.by_status("missing")
    out: dict[str, list[str]] = {}
    for entry in report.by_status("unexpected"):
        forms = canonical_tf(entry.source)
        leaf = forms[0].leaf if forms else ""
        out[entry.source] = [m.key for m in missing if canonical_torch(m.key).leaf == leaf
                             and _dims(m.out_shape) == _dims(entry.shape)]
    return out


def suggest(report: Report) -> str:
    """The proposed rules as TOML text (see the module docstring)."""
    candidates = _candidates(report)
    open_keys = {m.key for m in report.by_status("missing")}
    by_canon = {canonical_torch(k).loose(): k for k in open_keys}
    families: dict[tuple[str, str], None] = {}
    for source, keys in candidates.items():
        scopes = split_tf(source)[:-1]
        for key in keys:
            parts = key.split(".")[:-1]
            common = 0
            while common < min(len(scopes), len(parts)) and \
                    tokens(scopes[-1 - common]) == tokens(parts[-1 - common]):
                common += 1
            families[_family(scopes[:len(scopes) - common], parts[:len(parts) - common])] = None
    renames, taken, covered = [], set(), set()
    scored = []
    for pattern, replace in families:
        regex = re.compile(pattern)
        met: dict[str, str] = {}
        for source in candidates:
            if source in covered or not regex.search(source):
                continue
            renamed = regex.sub(replace, source)
            forms = canonical_tf(renamed)
            key = by_canon.get(forms[0].loose()) if forms else None
            if key is None or key in taken:
                met = {}
                break  # renames a variable that then meets nothing (or a taken key): not this family
            met[source] = key
        if met and len(set(met.values())) == len(met):
            scored.append((len(met), pattern, replace, met))
    for _, pattern, replace, met in sorted(scored, key=lambda item: -item[0]):
        if any(s in covered for s in met) or any(k in taken for k in met.values()):
            continue
        renames.append((pattern, replace, len(met)))
        covered |= set(met)
        taken |= set(met.values())
    claims: dict[str, list[str]] = defaultdict(list)
    for source, keys in candidates.items():
        if source not in covered:
            for key in keys:
                if key not in taken:
                    claims[key].append(source)
    pairs = {s: ks[0] for s, ks in ((s, [k for k in candidates[s] if k not in taken]) for s in candidates)
             if s not in covered and len(ks) == 1 and claims[ks[0]] == [s]}
    lines = [f"# tf2torch --suggest-rules for {report.source}: review before use (tf2torch convert --rules FILE)"]
    for pattern, replace, count in renames:
        lines += ["", f"[[rename]]  # {count} variable(s)", f"pattern = {_toml(pattern)}", f"replace = {_toml(replace)}"]
    if pairs:
        lines += ["", "[pairs]"] + [f"{_toml(s)} = {_toml(k)}" for s, k in sorted(pairs.items())]
    left = sorted(s for s in candidates if s not in covered and s not in pairs)
    if left:
        lines += ["", "# not settled (no single candidate): pair them yourself, or [skip] them"]
        lines += [f"#   {s!r}: {', '.join(candidates[s][:4]) or 'no key of that role and size'}" for s in left]
    return "\n".join(lines) + "\n"


def _toml(text: str) -> str:
    """A TOML basic string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
