"""Fuzz every reader with mutated real fixtures: ``python -m tests.fuzz --cases 50000`` (``make fuzz``).

Allowed outcomes of a case: a read that returns what it declares, or a ``Tf2TorchError`` whose message
is one line. Everything else is a failure: any other exception, a hang (``--timeout`` per case), an
allocation sized by a forged field (the workers run under ``RLIMIT_AS``, so it surfaces as
``MemoryError``) and a crash of the process (a worker dying on a signal). Each failure prints the
target, seed, case number, a reproducer directory under /tmp and the traceback; the exit status is 1.

Cases are a pure function of (--seed, target, case number): ``--target T --case N`` replays one case
in this process. Targets and their share of --cases are in ``tests/fuzz_targets.py``; workers are
forked processes (``--jobs``), each owning a fixed slice of the cases, so counts never depend on timing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

from tests.fuzz_targets import TARGETS, Case, materialize
from tf2torch.errors import Tf2TorchError

REPRO_DIR = Path(tempfile.gettempdir()) / "tf2torch-fuzz"
KINDS = ("ok", "rejected", "disallowed")


class CaseTimeout(BaseException):
    """Raised by SIGALRM inside a case that runs longer than --timeout (a hang)."""


@dataclass
class Outcome:
    kind: str  # "ok" (a read), "rejected" (a one-line Tf2TorchError), "disallowed"
    detail: str = ""  # for disallowed: the reason and traceback


def make_case(target: str, seed: int, case: int) -> Case:
    return TARGETS[target].make(random.Random(f"{seed}/{target}/{case}"))


def run_case(target: str, case_input: Case, workdir: Path, timeout: float) -> Outcome:
    """Run one case in a fresh directory; the timeout is enforced with SIGALRM."""
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    path = materialize(case_input, workdir)
    start_rss = _reset_peak_rss()
    outcome = _run(target, path, case_input, timeout)
    size = sum(len(b) for b in case_input.files.values())
    grown = _peak_rss() - start_rss if start_rss is not None else 0
    if outcome.kind != "disallowed" and grown > PEAK_SLACK + PEAK_FACTOR * size:
        return Outcome("disallowed", f"allocation: peak memory grew by {grown >> 20} MiB reading {size} bytes of "
                       f"input (a size taken from a forged field); the case ended as '{outcome.kind}'")
    return outcome


# What a read may allocate beyond its input before it counts as sized by a forged field. RLIMIT_AS
# turns the large ones into MemoryError; this catches those made (and freed) inside C libraries.
PEAK_SLACK, PEAK_FACTOR = 256 << 20, 16


def _reset_peak_rss() -> int | None:
    """Reset the kernel's peak-RSS mark (Linux: clear_refs 5); the current RSS, or None if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _status_kb("VmRSS") << 10


def _peak_rss() -> int:
    return _status_kb("VmHWM") << 10


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


def _run(target: str, path: Path, case_input: Case, timeout: float) -> Outcome:
    def alarm(signum: int, frame: object) -> None:
        raise CaseTimeout(f"case ran longer than {timeout} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        TARGETS[target].run(path, case_input)
        return Outcome("ok")
    except Tf2TorchError as exc:
        message = str(exc)
        if message and len(message.splitlines()) == 1 and "\n" not in message:
            return Outcome("rejected")
        return Outcome("disallowed", f"{type(exc).__name__} with a {len(message.splitlines())}-line message:\n"
                       + traceback.format_exc())
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001  (CaseTimeout, MemoryError, RecursionError, bugs)
        what = "hang" if isinstance(exc, CaseTimeout) else type(exc).__name__
        return Outcome("disallowed", f"{what}:\n" + traceback.format_exc())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def save_repro(target: str, seed: int, case: int, case_input: Case) -> Path:
    """The case's files under /tmp/tf2torch-fuzz/<target>-s<seed>-c<case>/, with how to replay it."""
    folder = REPRO_DIR / f"{target}-s{seed}-c{case}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    materialize(case_input, folder)
    (folder / "REPLAY.txt").write_text(
        f"entry: {case_input.entry}\noptions: {json.dumps(case_input.options, default=repr)}\n"
        f"replay: python -m tests.fuzz --seed {seed} --target {target} --case {case}\n", encoding="utf-8")
    return folder


def plan_cases(total: int, names: list[str]) -> dict[str, int]:
    """Split ``total`` over the targets by weight (largest remainders get the rest)."""
    weights = {n: TARGETS[n].weight for n in names}
    share = {n: total * w / sum(weights.values()) for n, w in weights.items()}
    counts = {n: int(s) for n, s in share.items()}
    for n in sorted(share, key=lambda n: counts[n] - share[n])[: total - sum(counts.values())]:
        counts[n] += 1
    return counts


def limit_memory(gigabytes: float) -> None:
    if gigabytes > 0:
        limit = int(gigabytes * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _worker(tasks: list[tuple[str, int]], start: int, seed: int, timeout: float, memory_gb: float,
            base: str, out_fd: int) -> None:
    """Child process: run tasks[start:], reporting "start i" before and a result line after each."""
    limit_memory(memory_gb)
    warnings.simplefilter("ignore")
    work = Path(base) / f"worker-{os.getpid()}"
    out = os.fdopen(out_fd, "w", buffering=1)
    try:
        for i in range(start, len(tasks)):
            target, case = tasks[i]
            out.write(json.dumps({"start": i}) + "\n")
            try:
                case_input = make_case(target, seed, case)
            except Exception:  # a bug of the fuzzer itself, not of a reader: still a failure, said so
                out.write(json.dumps({"done": i, "kind": "disallowed", "repro": None,
                                      "detail": "FUZZER ERROR making the case:\n" + traceback.format_exc()}) + "\n")
                continue
            outcome = run_case(target, case_input, work / "case", timeout)
            line = {"done": i, "kind": outcome.kind}
            if outcome.kind == "disallowed":
                line["detail"] = outcome.detail
                line["repro"] = str(save_repro(target, seed, case, case_input))
            out.write(json.dumps(line) + "\n")
            if outcome.kind == "disallowed" and _signature(outcome.detail)[1]:
                out.write(json.dumps({"shrinking": i}) + "\n")
                small = shrink(target, case_input, outcome.detail, work / "case", timeout,
                               beat=lambda i=i: out.write(json.dumps({"beat": i}) + "\n"))
                path = _save_minimal(target, seed, case, small) if small else None
                out.write(json.dumps({"minimal": i, "path": path}) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        out.flush()
        os._exit(0)


def _signature(detail: str) -> tuple[str, str]:
    """(exception line, innermost tf2torch frame) of a traceback; ("", "") for crashes and hangs."""
    lines = detail.strip().splitlines()
    frames = [line.strip() for line in lines if line.strip().startswith('File "') and "/tf2torch/" in line]
    kind = lines[-1].split(":", 1)[0] if lines and frames else ""
    return (kind, frames[-1] if frames else "") if not detail.startswith(("hang", "allocation")) else ("", "")


def shrink(target: str, case_input: Case, detail: str, workdir: Path, timeout: float, beat,
           budget: float = 30.0, tries: int = 300) -> Case | None:
    """A smaller single-file input failing with the same exception at the same line: chunks of halving
    size are cut out while the failure stays (ddmin-like, bounded by ``budget`` seconds and ``tries``)."""
    if len(case_input.files) != 1:
        return None
    ((name, data),) = case_input.files.items()
    if not isinstance(data, bytes) or len(data) > 4 << 20:
        return None
    want, best, chunk = _signature(detail), data, max(len(data) // 2, 1)
    deadline = time.monotonic() + budget
    while chunk and tries > 0 and time.monotonic() < deadline:
        for start in range(0, len(best), chunk):
            candidate = best[:start] + best[start + chunk:]
            beat()
            outcome = run_case(target, replace(case_input, files={name: candidate}), workdir, timeout)
            tries -= 1
            if outcome.kind == "disallowed" and _signature(outcome.detail) == want:
                best = candidate
                break
            if tries <= 0 or time.monotonic() >= deadline:
                break
        else:
            chunk //= 2
    return replace(case_input, files={name: best}) if len(best) < len(data) else None


def _save_minimal(target: str, seed: int, case: int, small: Case) -> str:
    folder = REPRO_DIR / f"{target}-s{seed}-c{case}" / "minimal"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return str(materialize(small, folder))


class _Slot:
    """One worker process and the slice of tasks it owns."""

    def __init__(self, tasks: list[tuple[str, int]]) -> None:
        self.tasks, self.next, self.pid, self.fd = tasks, 0, 0, -1
        self.buffer, self.current, self.since, self.killed, self.shrinking = b"", -1, 0.0, False, False

    def spawn(self, args: argparse.Namespace) -> None:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _worker(self.tasks, self.next, args.seed, args.timeout, args.memory_gb, args.base, write_fd)
        os.close(write_fd)
        self.pid, self.fd, self.buffer, self.current, self.killed = pid, read_fd, b"", -1, False
        self.shrinking = False


def run_parallel(tasks: list[tuple[str, int]], args: argparse.Namespace, report) -> None:
    """Run ``tasks`` over --jobs forked workers; a worker that dies or hangs in C code is reported
    against the case it was running and replaced by a fresh one for the rest of its slice."""
    jobs = max(1, min(args.jobs, len(tasks)))
    slots = [_Slot(tasks[k::jobs]) for k in range(jobs)]
    for slot in slots:
        slot.spawn(args)
    live = {slot.fd: slot for slot in slots}
    while live:
        ready, _, _ = select.select(list(live), [], [], 1.0)
        for fd in ready:
            slot = live[fd]
            chunk = os.read(fd, 1 << 16)
            slot.buffer += chunk
            *lines, slot.buffer = slot.buffer.split(b"\n")
            for raw in lines:
                msg = json.loads(raw)
                if "start" in msg or "shrinking" in msg:
                    slot.current, slot.since = msg.get("start", msg.get("shrinking")), time.monotonic()
                    slot.shrinking = "shrinking" in msg
                elif "beat" in msg:
                    slot.since = time.monotonic()
                elif "minimal" in msg:
                    slot.current, slot.shrinking = -1, False
                    report(*slot.tasks[msg["minimal"]], "minimal", msg["path"] or "", None)
                else:
                    slot.next, slot.current = msg["done"] + 1, -1
                    report(*slot.tasks[msg["done"]], msg["kind"], msg.get("detail", ""), msg.get("repro"))
            if not chunk:  # the worker exited: normally at the end, else it crashed mid-case
                del live[fd]
                os.close(fd)
                _, status = os.waitpid(slot.pid, 0)
                if slot.current >= 0:
                    why = (f"hang: no result after {args.timeout + 10:.0f} s (stuck in C code), worker killed"
                           if slot.killed else f"crash: worker died ({_status(status)}) while running the case")
                    if slot.shrinking:  # already reported; only the search for a smaller input died
                        slot.current, slot.shrinking = -1, False
                    else:
                        _lost(slot, args, report, why)
                    if slot.next < len(slot.tasks):
                        slot.spawn(args)
                        live[slot.fd] = slot
        for slot in list(live.values()):  # a hang in C code that SIGALRM cannot interrupt
            if slot.current >= 0 and time.monotonic() - slot.since > args.timeout + 10:
                os.kill(slot.pid, signal.SIGKILL)
                slot.since, slot.killed = float("inf"), True


def _lost(slot: _Slot, args: argparse.Namespace, report, why: str) -> None:
    target, case = slot.tasks[slot.current]
    repro = save_repro(target, args.seed, case, make_case(target, args.seed, case))
    report(target, case, "disallowed", why, str(repro))
    slot.next, slot.current = slot.current + 1, -1


def _status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.WEXITSTATUS(status)}"


def fuzz(counts: dict[str, int], seed: int = 0, jobs: int | None = None, timeout: float = 5.0,
         memory_gb: float = 4.0, out=sys.stdout) -> tuple[dict[str, dict[str, int]], list[dict]]:
    """Run ``counts[target]`` cases of each target: per-target outcome counts and the failures (each
    also printed to ``out`` with its reproducer and traceback as it happens)."""
    tasks = [(name, case) for name, n in counts.items() for case in range(n)]
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # case files in RAM when possible
    base = tempfile.mkdtemp(prefix="tf2torch-fuzz-work-", dir=shm)
    args = argparse.Namespace(seed=seed, timeout=timeout, memory_gb=memory_gb, base=base,
                              jobs=jobs or os.cpu_count() or 1)
    results = {name: dict.fromkeys(KINDS, 0) for name in counts}
    failures: list[dict] = []

    def report(target: str, case: int, kind: str, detail: str, repro: str | None) -> None:
        if kind == "minimal":  # a smaller input with the same failure, found after the case
            if detail:
                print(f"minimal reproducer of target={target} case={case}: {detail}", file=out, flush=True)
                next(f for f in failures if (f["target"], f["case"]) == (target, case))["minimal"] = detail
            return
        results[target][kind] += 1
        if kind == "disallowed":
            failures.append({"target": target, "seed": seed, "case": case, "repro": repro, "detail": detail})
            print(f"\nDISALLOWED target={target} seed={seed} case={case} reproducer={repro}\n"
                  f"replay: python -m tests.fuzz --seed {seed} --target {target} --case {case}\n{detail}",
                  file=out, flush=True)

    cwd = os.getcwd()
    os.chdir(base)  # a stray relative path in an HDF5 edit (external storage) lands here, not in the repo
    try:
        _warm_up(list(counts))
        run_parallel(tasks, args, report)
    finally:  # also removes what workers killed mid-case left behind
        os.chdir(cwd)
        shutil.rmtree(base, ignore_errors=True)
    return results, failures


def _warm_up(names: list[str]) -> None:
    """Import and load seeds once in the parent, so forked workers start warm."""
    warnings.simplefilter("ignore")
    import torch  # noqa: F401  (imported by api.convert; loading it once here keeps forks cheap)

    for name in names:
        make_case(name, 0, 0)


def render(results: dict[str, dict[str, int]], seconds: float) -> str:
    lines = [f"{'target':<14}{'cases':>8}{'ok':>8}{'rejected':>10}{'disallowed':>12}"]
    totals = dict.fromkeys(KINDS, 0)
    for name, counts in results.items():
        lines.append(f"{name:<14}{sum(counts.values()):>8}{counts['ok']:>8}{counts['rejected']:>10}"
                     f"{counts['disallowed']:>12}")
        for kind in KINDS:
            totals[kind] += counts[kind]
    lines.append(f"{'total':<14}{sum(totals.values()):>8}{totals['ok']:>8}{totals['rejected']:>10}"
                 f"{totals['disallowed']:>12}")
    lines.append(f"wall time {seconds:.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50000, help="total cases, split over the targets by weight")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--targets", help=f"comma-separated subset of: {', '.join(TARGETS)}")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per case before it counts as a hang")
    parser.add_argument("--memory-gb", type=float, default=4.0, help="RLIMIT_AS of the workers (0: none)")
    parser.add_argument("--target", help="with --case: replay one case in this process, with its traceback")
    parser.add_argument("--case", type=int)
    parser.add_argument("--counts", help="cases per target instead of --cases/--targets, e.g. proto=300,table=400")
    parser.add_argument("--json", help="also write the counts and failures to this JSON file")
    args = parser.parse_args(argv)
    if args.case is not None:
        if args.target not in TARGETS:
            parser.error(f"--case needs --target, one of {', '.join(TARGETS)}")
        cwd = os.getcwd()
        with tempfile.TemporaryDirectory(prefix="tf2torch-fuzz-replay-") as work:
            os.chdir(work)
            case_input = make_case(args.target, args.seed, args.case)
            limit_memory(args.memory_gb)
            outcome = run_case(args.target, case_input, Path(work) / "case", args.timeout)
            os.chdir(cwd)
        print(f"{args.target} case {args.case}: {outcome.kind}\n{outcome.detail}".rstrip())
        print(f"reproducer: {save_repro(args.target, args.seed, args.case, case_input)}")
        if outcome.kind == "disallowed" and _signature(outcome.detail)[1]:
            with tempfile.TemporaryDirectory(prefix="tf2torch-fuzz-replay-") as work:
                small = shrink(args.target, case_input, outcome.detail, Path(work) / "case", args.timeout,
                               beat=lambda: None)
            if small:
                print(f"minimal reproducer: {_save_minimal(args.target, args.seed, args.case, small)}")
        return int(outcome.kind == "disallowed")
    if args.counts:
        counts = {name: int(n) for name, _, n in (item.partition("=") for item in args.counts.split(","))}
    else:
        counts = plan_cases(args.cases, args.targets.split(",") if args.targets else list(TARGETS))
    unknown = [n for n in counts if n not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; known: {', '.join(TARGETS)}")
    started = time.monotonic()
    results, failures = fuzz(counts, args.seed, args.jobs, args.timeout, args.memory_gb)
    seconds = time.monotonic() - started
    print(render(results, seconds))
    if args.json:
        Path(args.json).write_text(json.dumps({"seed": args.seed, "seconds": seconds, "results": results,
                                               "failures": failures}, indent=1), encoding="utf-8")
    return int(bool(failures))


if __name__ == "__main__":
    sys.exit(main())
