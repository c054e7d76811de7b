"""Write OUT as a transformers repository, all or nothing (``write.atomic.staged_output``).

The weights are written as ``save_pretrained`` writes them: ``model.safetensors`` with metadata
``{"format": "pt"}`` (transformers refuses other formats' files under that name), or above the shard size
``model-00001-of-0000N.safetensors`` + ``model.safetensors.index.json``. Each tensor is produced from its
h5 dataset while it is written, so memory stays near the largest tensor.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..map.account import Report
from ..plan import TensorPlan
from ..write.atomic import staged_output
from ..write.safetensors import write_safetensors
from . import CONFIG
from .repo import Repo

# save_pretrained's default in transformers 4.x: "5GB", decimal units (huggingface_hub's parse_size_to_int)
MAX_SHARD_SIZE = 5 * 10**9
SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
CARD = "README.md"


def shard(plans: list[TensorPlan], max_size: int) -> list[list[TensorPlan]]:
    """huggingface_hub's split, in the given (state_dict) order: a tensor that would take a shard past
    ``max_size`` starts the next one; a tensor larger than ``max_size`` is a shard of its own."""
    shards: list[list[TensorPlan]] = []
    current: list[TensorPlan] = []
    size = 0
    for plan in plans:
        if plan.nbytes > max_size:
            shards.append([plan])
            continue
        if current and size + plan.nbytes > max_size:
            shards.append(current)
            current, size = [], 0
        current.append(plan)
        size += plan.nbytes
    if current or not shards:
        shards.append(current)
    return shards


def write_repo(out: Path, repo: Repo, plans: list[TensorPlan], report: Report, config: dict[str, Any],
               card_line: str, *, force: bool, max_shard_size: int = MAX_SHARD_SIZE,
               progress: Callable[[TensorPlan, int], None] | None = None, title: str | None = None) -> list[str]:
    """Write every file of OUT in a staging directory and move it into place; returns the names written.

    ``title``: a new model card with this title (a source with no card of its own, e.g. a checkpoint);
    default: the repository's README.md with the line appended."""
    groups = shard(plans, max_shard_size)
    names = [SINGLE] if len(groups) == 1 else \
        [f"model-{i:05d}-of-{len(groups):05d}.safetensors" for i in range(1, len(groups) + 1)]
    report.outputs = {name: "weights" for name in names}
    if len(groups) > 1:
        report.outputs[INDEX] = "shard index"
    report.outputs |= {CONFIG: "config (architectures, dtype)", CARD: "model card (+ provenance line)",
                       "report.json": "this report"}
    copies = [rel for rel in repo.copies if str(rel) not in (CONFIG, CARD)]
    report.outputs |= {str(rel): "copied unchanged" for rel in copies}
    expect = getattr(progress, "expect", None)  # tf2torch.progress.Progress: announce the totals
    if expect is not None:
        expect(sum(p.nbytes for p in plans), len(plans))
    with staged_output(out, force=force) as staging:
        for name, group in zip(names, groups):
            write_safetensors(staging / name, group, metadata={"format": "pt"}, on_tensor=progress)
        if len(groups) > 1:
            weight_map = {p.key: name for name, group in zip(names, groups) for p in group}
            _write_json(staging / INDEX, {"metadata": {"total_size": sum(p.nbytes for p in plans)},
                                          "weight_map": weight_map})
        _write_json(staging / CONFIG, config)
        for rel in copies:
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(repo.root / rel, staging / rel)  # follows a snapshot's symlink to its blob
        (staging / CARD).write_bytes(model_card(repo.root / CARD, card_line) if title is None
                                      else f"# {title}\n\n{card_line}\n".encode())
        (staging / "report.json").write_text(report.dumps(), encoding="utf-8")
    return [*names, *([INDEX] if len(groups) > 1 else []), CONFIG, *map(str, copies), CARD, "report.json"]


def model_card(card: Path, line: str) -> bytes:
    """The repository's card with the provenance line appended (its bytes otherwise unchanged, whatever
    their encoding), or a new card holding only a title and that line."""
    if card.is_file():
        data = card.read_bytes()
        return data + (b"" if not data or data.endswith(b"\n") else b"\n") + b"\n" + line.encode() + b"\n"
    return f"# {card.parent.resolve().name}\n\n{line}\n".encode()


def _write_json(path: Path, data: Any) -> None:
    # transformers' own spelling: indent 2, sorted keys, a final newline
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
