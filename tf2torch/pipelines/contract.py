"""The trust contract, checked once after any mode: exit 0 only when the numbers can be the same.

A mode reports what it mapped, filled, skipped and left open; here the ``--allow-*`` patterns settle
what the user accepts, and anything left (a shape mismatch, a missing key the forward pass uses, a source
variable nothing took, a failure no entry holds) fails the conversion with a ``MappingError`` that
carries the report (``--suggest-rules`` proposes rules from it). The failed report is written first, so a
CI job can show why.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import MappingError, OutputError
from ..map.account import Report
from ..options import ConvertOptions


def enforce(report: Report, options: ConvertOptions, source: str | Path, out_dir: str | Path | None) -> None:
    """Apply the ``--allow-*`` patterns to ``report``; raise ``MappingError(report=...)`` if it fails."""
    report.allow("missing", options.allow_missing, "--allow-missing")
    report.allow("unexpected", options.allow_unexpected, "--allow-unexpected")
    problems = report.problems(options.strict)
    if not problems:
        return
    where = write_failed_report(report, out_dir, options.report_path, options.force)
    raise MappingError(f"{source}: " + "; ".join(problems) + (f" (full report: {where})" if where else ""),
                       report=report)


def write_failed_report(report: Report, out_dir: str | Path | None, report_path: str | Path | None,
                        force: bool) -> Path | None:
    """The report of a conversion that failed the contract; None if there is nowhere to put it (a dry run
    without --report) or it cannot be written (the mapping error is the one to show, not this one)."""
    from ..write.output import failed_report_path, write_report_file

    if report_path is None and out_dir is None:
        return None
    path = Path(report_path) if report_path is not None else failed_report_path(Path(out_dir))  # type: ignore[arg-type]
    try:
        write_report_file(path, report, failed=True, force=force)
    except OutputError:
        return None  # e.g. --report names an existing file without --force: the mapping error stands
    return path
