"""``make bench``, Hugging Face part: converting a BERT-large-size ``tf_model.h5`` repository.

    python benchmarks/hf_bench.py [--repeats 3] [--only hf-convert,hf-floor-cp-sync] [--out hf_results.json]

The repository (``make_hf_repo.py``: transformers 4.x's ``TFBertModel``, 1.34 GB) is generated once and
cached. Steps, each its own process, taking turns after one untimed warm-up round (``run.py``'s
``run_once``: outputs deleted, ``sync``, GNU ``time`` for peak RSS):

- ``hf-convert``: ``tf2torch convert REPO -o OUT`` (a transformers repository, fsynced);
- ``hf-floor-cp-sync``: ``cp`` of ``tf_model.h5`` + ``sync``, the same bytes made durable;
- ``hf-baseline-transformers``: transformers 4.x's TF -> PyTorch loader + ``save_pretrained``
  (``hf_baseline.py``; it needs TensorFlow).

Targets (issue 24, reported, never asserted): convert <= 1.3x cp + sync; peak RSS <= largest tensor + 300 MB.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_checkpoint import cache_root  # noqa: E402
from make_hf_repo import ensure_repo  # noqa: E402
from run import RSS_SLACK_MB, Step, machine, run_rounds, table, tf2torch_command  # noqa: E402

MAX_FLOOR_RATIO = 1.3  # convert a repo: at most 1.3x the time of cp + sync of its tf_model.h5


def steps(repo: Path, out: Path) -> list[Step]:
    h5 = repo / "tf_model.h5"
    return [
        Step("hf-convert", [*tf2torch_command(), "convert", str(repo), "-o", str(out / "pt"), "-q"], [out / "pt"]),
        Step("hf-floor-cp-sync", ["sh", "-c", f'cp "{h5}" "{out}/copy.h5" && sync "{out}/copy.h5"'],
             [out / "copy.h5"]),
        Step("hf-baseline-transformers", [sys.executable, str(HERE / "hf_baseline.py"), str(repo), str(out / "bl")],
             [out / "bl"]),
    ]


def largest_tensor(h5: Path) -> tuple[str, int, int, int]:
    """(name, bytes) of the largest dataset of the h5 file, the dataset count and their total bytes."""
    import h5py

    found: list[tuple[str, int]] = []
    with h5py.File(h5, "r") as f:
        f.visititems(lambda name, obj: found.append((name, obj.nbytes)) if isinstance(obj, h5py.Dataset) else None)
    name, nbytes = max(found, key=lambda item: item[1])
    return name, nbytes, len(found), sum(n for _, n in found)


def targets(by: dict[str, Step], largest: int) -> dict[str, dict]:
    out: dict[str, dict] = {}
    conv = by.get("hf-convert")
    if conv and "hf-floor-cp-sync" in by:
        ratio = conv.median("wall_s") / by["hf-floor-cp-sync"].median("wall_s")
        out["hf_floor_ratio"] = {"what": "convert REPO / (cp + sync of tf_model.h5) (wall)", "value": round(ratio, 2),
                                 "target": f"<= {MAX_FLOOR_RATIO}", "met": ratio <= MAX_FLOOR_RATIO}
    if conv and "hf-baseline-transformers" in by:
        base = by["hf-baseline-transformers"]
        out["hf_baseline_speedup"] = {"what": "transformers 4.x loader + save_pretrained / convert REPO (wall)",
                                      "value": round(base.median("wall_s") / conv.median("wall_s"), 1),
                                      "target": "reported", "met": True}
        out["hf_baseline_rss"] = {"what": "transformers 4.x loader + save_pretrained, peak RSS MB",
                                  "value": round(base.median("rss_mb")), "target": "reported", "met": True}
    if conv:
        limit = largest / 2**20 + RSS_SLACK_MB
        rss = conv.median("rss_mb")
        out["hf_peak_rss"] = {"what": "convert REPO, peak RSS MB", "value": round(rss),
                              "target": f"<= largest tensor + {RSS_SLACK_MB} = {limit:.0f}", "met": rss <= limit}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per step (after one untimed)")
    parser.add_argument("--only", help="comma-separated step names")
    parser.add_argument("--out", type=Path, default=HERE / "hf_results.json")
    args = parser.parse_args()

    repo = ensure_repo()
    out = cache_root() / "hf-out"
    out.mkdir(parents=True, exist_ok=True)
    chosen = steps(repo, out)
    if args.only:
        chosen = [s for s in chosen if s.name in set(args.only.split(","))]
    name, largest, count, total = largest_tensor(repo / "tf_model.h5")
    h5_bytes = (repo / "tf_model.h5").stat().st_size
    print(f"repository {repo}: {count} tensors, tf_model.h5 {h5_bytes / 1e9:.2f} GB, largest {name} "
          f"{largest / 2**20:.0f} MiB", file=sys.stderr)
    run_rounds(chosen, args.repeats)

    results = {
        "machine": machine(),
        "repository": {"path": str(repo), "tensors": count, "h5_bytes": h5_bytes, "tensor_bytes": total,
                       "largest_tensor": {"name": name, "bytes": largest}},
        "repeats": args.repeats,
        "steps": {s.name: {"argv": s.argv, "runs": s.runs, "wall_s": s.median("wall_s"),
                           "rss_mb": s.median("rss_mb"), "cpu_s": s.median("cpu_s")} for s in chosen},
        "targets": targets({s.name: s for s in chosen}, largest),
    }
    print(table(chosen) + "\n" + "\n".join(
        f"{'met ' if t['met'] else 'MISS'}  {t['what']}: {t['value']} (target {t['target']})"
        for t in results["targets"].values()))
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
