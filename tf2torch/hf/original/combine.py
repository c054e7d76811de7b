"""The checkpoint's variables as a convention reads them where one stored tensor is not one key: several
original variables into one tensor (``combines``: OpenAI ImageGPT keeps ``q_proj``, ``k_proj``, ``v_proj``
apart where transformers holds one ``c_attn``, and its ``sos`` vector apart from the ``wte`` rows transformers
appends it to), and one into several (``splits``: XLNet's biases stacked over layers). Both conversion routes
(``--hf-config`` and ``--model``) read them so.

Each group of parts becomes one variable before anything maps: named by the ``Combine``'s ``into`` (the
convention's renames then name its key like any other weight), read lazily as the concatenation of its
parts, each through its layout from the one table (``map.layouts``). Every plan keeps one source; the report
then accounts for each part by its own name (``account``): which key it went into, at which offset, through
which layout. A group with a part missing is refused by name, never filled partly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ...errors import MappingError
from ...map import layouts
from ...map.account import Entry, Report
from ...spec import ModelSpec, Role, Variable
from . import Combine, Convention


@dataclass(frozen=True)
class Combined:
    """One combined variable: its parts in order, each with its layout and its extent along ``axis``."""

    name: str  # the combined variable's name (``into`` filled in)
    axis: int
    parts: tuple[tuple[Variable, layouts.Layout, int, int], ...]  # (part, layout, start, stop)


def combine(spec: ModelSpec, convention: Convention) -> tuple[ModelSpec, dict[str, Combined]]:
    """``spec`` with each complete group of parts replaced by one combined variable; the combined ones by name."""
    if not convention.combines:
        return spec, {}
    taken: set[str] = set()
    added: list[Variable] = []
    combined: dict[str, Combined] = {}
    for rule in convention.combines:
        for groups, found in _groups(spec.variables, rule).items():
            var, info = _one(rule, groups, found, convention)
            added.append(var)
            combined[var.name] = info
            taken |= {v.name for v in found.values()}
    clash = sorted(n for n in combined if any(v.name == n and v.name not in taken for v in spec.variables))
    if clash:  # a name the convention makes up is also a variable of the checkpoint: two sources for one name
        raise MappingError(f"{clash[0]!r}: the {convention.name} convention combines parts into this name, but the "
                           "checkpoint holds a variable of that name too; is it this family's checkpoint?")
    kept = [v for v in spec.variables if v.name not in taken]
    return replace(spec, variables=(*kept, *added)), combined


def split(spec: ModelSpec, convention: Convention) -> ModelSpec:
    """``spec`` with each variable the convention says is stacked over layers read as one variable per
    index of its first axis (``<name>/<i>``: a view of the stored tensor, read when its plan runs)."""
    if not convention.splits:
        return spec
    variables: list[Variable] = []
    for var in spec.variables:
        if var.role is not Role.WEIGHT or not var.shape or not re.search(convention.splits, var.name):
            variables.append(var)
            continue
        part = var.nbytes // var.shape[0]
        variables += [replace(var, name=f"{var.name}/{i}", shape=var.shape[1:], nbytes=part,
                              loader=lambda v=var, i=i: v.read()[i], tf_name="",
                              note=f"{var.name}[{i}] (stacked over layers)") for i in range(var.shape[0])]
    return replace(spec, variables=tuple(variables))


def account(report: Report, combined: dict[str, Combined]) -> None:
    """The combined variables' report entries as one entry per part (its own name, shape and layout); a
    combined variable nothing took keeps its one entry, naming its parts."""
    for i, entry in reversed(list(enumerate(report.entries))):
        info = combined.get(entry.source)
        if info is None or entry.status != "mapped":
            continue
        n = len(info.parts)
        report.entries[i:i + 1] = [
            Entry("mapped", source=var.name, key=entry.key, layout=layout.describe, shape=var.shape,
                  out_shape=layout.out_shape(var.shape), dtype=var.dtype.name,
                  reason=f"{entry.reason.split(';')[0]}; part {k + 1} of {n} of {entry.key!r}: [{start}:{stop}] "
                         f"along axis {info.axis}")
            for k, (var, layout, start, stop) in enumerate(info.parts)]


def _groups(variables: tuple[Variable, ...], rule: Combine) -> dict[tuple[str, ...], dict[int, Variable]]:
    """The rule's parts found among ``variables``, grouped by what their patterns' groups captured (the layer)."""
    out: dict[tuple[str, ...], dict[int, Variable]] = {}
    for var in variables:
        if var.role is not Role.WEIGHT:  # an optimizer slot of a part is not a part
            continue
        for k, (pattern, _) in enumerate(rule.parts):
            m = re.fullmatch(pattern, var.name)
            if m is not None:
                out.setdefault(m.groups(), {})[k] = var
                break
    return out


def _one(rule: Combine, groups: tuple[str, ...], found: dict[int, Variable],
         convention: Convention) -> tuple[Variable, Combined]:
    name = re.sub(r"\\(\d)", lambda m: groups[int(m[1]) - 1], rule.into)
    missing = [_filled(p, groups) for k, (p, _) in enumerate(rule.parts) if k not in found]
    present = [found[k].name for k in sorted(found)]
    if missing:
        raise MappingError(f"{present[0]!r}: the {convention.name} convention concatenates it with "
                           f"{len(rule.parts) - 1} other part(s) into {name!r}, and the checkpoint lacks "
                           f"{', '.join(missing)}; pass the whole checkpoint (or the config of the family it is)")
    parts: list[tuple[Variable, layouts.Layout, int, int]] = []
    shapes: list[tuple[int, ...]] = []
    for k, (_, kind) in enumerate(rule.parts):
        var, layout = found[k], layouts.get(kind)
        try:
            shape = layout.out_shape(var.shape)
        except MappingError as exc:
            raise MappingError(f"{var.name!r}: a part of {name!r} (the {convention.name} convention): layout "
                               f"{layout.describe}: {exc}") from None
        start = sum(s[rule.axis] for s in shapes) if shapes else 0
        parts.append((var, layout, start, start + shape[rule.axis]))
        shapes.append(shape)
    others = {s[:rule.axis] + s[rule.axis + 1:] for s in shapes}
    dtypes = {var.dtype.name for var, *_ in parts}
    if len(others) != 1 or len(dtypes) != 1:
        raise MappingError(f"{name!r}: its parts {', '.join(present)} do not concatenate along axis {rule.axis} "
                           f"(shapes after their layouts {shapes}, dtypes {sorted(dtypes)}); a corrupt checkpoint")
    total = list(shapes[0])
    total[rule.axis] = parts[-1][3]

    def read() -> object:
        import numpy as np

        return np.concatenate([layout.apply(var.read()) for var, layout, _, _ in parts], axis=rule.axis)

    first = parts[0][0]
    var = replace(first, name=name, shape=tuple(total), nbytes=sum(v.nbytes for v, *_ in parts), loader=read,
                  tf_name="", note="concatenated from " + ", ".join(present))
    return var, Combined(name, rule.axis, tuple(parts))


def _filled(pattern: str, groups: tuple[str, ...]) -> str:
    """A part's pattern as the name it expects for these groups: ``^model/h(\\d+)/attn/v_proj$`` -> ``model/h0/...``."""
    values = iter(groups)
    return re.sub(r"\([^)]*\)", lambda _: next(values, "?"), pattern).strip("^$")
