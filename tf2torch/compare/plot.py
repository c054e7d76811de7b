"""``--plot FILE.png``: per-layer max abs difference along the network, on a log scale.

The tolerance line is ``atol + rtol * max|TF value|`` per row: the largest difference any element of
that tensor may have. Exact rows (difference 0) sit on the floor of the axis with a hollow marker.
Drawn on a bare ``Figure`` with the Agg canvas: no pyplot, so no global state or GUI backend is touched.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import MissingDependencyError, OutputError
from ..write.atomic import atomic_write_file
from .result import VerifyResult

INSTALL_HINT = "pip install 'tf2torch[plot]'"
FLOOR = 1e-12


def check() -> None:
    """Fail before any long work when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(f"--plot needs matplotlib, which cannot be imported ({exc}); "
                                     f"install it with: {INSTALL_HINT}") from None


def write_plot(result: VerifyResult, path: Path, force: bool = False) -> None:
    """Write the per-layer plot as a PNG to ``path``, all or nothing (``force``: replace a file)."""
    check()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = [r for r in result.rows if r.max_abs is not None or r.status in ("shape", "missing")]
    x = list(range(len(rows)))
    diffs = [max(r.max_abs, FLOOR) if r.max_abs is not None else None for r in rows]
    tols = [r.tolerance(result.atol, result.rtol) for r in rows]
    fig = Figure(figsize=(max(6.0, 0.35 * len(rows) + 2), 4.2), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_yscale("log")
    measured = [(i, d) for i, d in zip(x, diffs) if d is not None]
    if measured:
        ax.plot([i for i, _ in measured], [d for _, d in measured], "-", color="tab:blue", lw=1, zorder=1)
    for i, r, d in zip(x, rows, diffs):
        if d is None:  # a shape mismatch or a missing value: no number, a mark at the top
            ax.axvspan(i - 0.4, i + 0.4, color="tab:red", alpha=0.15, lw=0)
            continue
        color = "tab:green" if r.status == "ok" else "tab:red"
        hollow = r.max_abs == 0
        ax.scatter([i], [d], s=28, zorder=3, edgecolors=color, facecolors="none" if hollow else color)
    tol_points = [(i, t) for i, t in zip(x, tols) if t is not None]
    if tol_points:
        ax.step([i for i, _ in tol_points], [t for _, t in tol_points], where="mid", color="tab:orange",
                ls="--", lw=1.2, label=f"tolerance: atol + rtol·max|ref| (atol={result.atol:g}, rtol={result.rtol:g})")
    first = next((i for i, r in zip(x, rows) if r.name == result.first_diverging), None)
    if first is not None:
        ax.axvline(first, color="tab:red", lw=1.2, label=f"first diverging: {rows[first].name}")
    boundary = next((i for i, r in zip(x, rows) if r.kind == "output"), None)
    if boundary is not None and boundary > 0:
        ax.axvline(boundary - 0.5, color="0.6", lw=0.8, ls=":")
    ax.set_xticks(x)
    ax.set_xticklabels([r.name for r in rows], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("max |PyTorch − TF|")
    verdict = "match" if result.ok else "MISMATCH"
    ax.set_title(f"{Path(result.source).name} vs {Path(result.out_dir).name}: {verdict}", fontsize=10)
    ax.grid(True, which="major", axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    try:
        with atomic_write_file(path, force) as staging:
            fig.savefig(staging, format="png")
    except OSError as exc:
        raise OutputError(f"--plot {path}: cannot write ({exc.strerror or exc})") from None
