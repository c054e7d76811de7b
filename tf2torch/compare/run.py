"""``verify``: the original in TensorFlow and the conversion in PyTorch, on the same inputs, per layer.

The function the CLI's ``verify`` command calls and the library's entry point. It returns a
``VerifyResult`` whether or not the numbers match (``result.ok``); it raises only when verification
cannot run (``Tf2TorchError``: TensorFlow missing, unreadable OUTDIR, bad inputs).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from .. import interface
from ..errors import OutputError, UsageError
from ..write.atomic import atomic_write_file, check_file_target
from . import plot as plotting
from . import run_torch
from .compare import compare_row, first_diverging, skipped_row, verdict
from .inputs import CHANNELS_FIRST, make_inputs
from .outdir import OutDir, read_outdir
from .reference import ACTIVATIONS, TFRun, align, full_float32, import_tf
from .result import Row, VerifyResult


def verify(
    source: str | Path,
    out_dir: str | Path,
    *,
    input_shape: tuple[int, ...] | None = None,
    inputs: Any = None,
    atol: float = 1e-4,
    rtol: float = 1e-4,
    seed: int = 0,
    report_file: str | Path | None = None,
    plot: str | Path | None = None,
    tf_inputs: Sequence[str] = (),
    tf_outputs: Sequence[str] = (),
    progress: bool = False,
    force: bool = False,
    hf_config: str | Path | None = None,
) -> VerifyResult:
    """Run ``source`` in TensorFlow and ``out_dir``'s model in PyTorch; compare outputs and layers.

    Args:
        source: what was converted: a Keras ``.keras`` / ``.h5`` file, a TF1 checkpoint prefix with
            its ``.meta`` graph, a frozen GraphDef ``.pb``, a SavedModel directory (final outputs only), or a
            ``.tflite`` model (run in the LiteRT interpreter, every tensor kept), or a transformers repository
            with TF weights (``run_hf``: its TF class against ``out_dir``'s PyTorch class, per output and
            hidden state; needs transformers 4.x).
        out_dir: the output directory of ``tf2torch convert`` (``model.py``, weights, ``report.json``; for a
            transformers repository, the repository it wrote).
        input_shape: with the batch axis, in the PyTorch model's layout (default: the TF model's
            input shape, batch 2).
        inputs: instead of seeded random inputs: an ``.npy`` / ``.npz`` path, an array, a name ->
            array mapping or a list of arrays, in the PyTorch model's layout.
        atol, rtol: an element matches when ``|torch - tf| <= atol + rtol * |tf|``.
        report_file: also write the result as JSON there (all or nothing).
        plot: also draw the per-layer differences into this PNG (needs matplotlib).
        tf_inputs, tf_outputs: TF1 graphs: input placeholder / output tensor names, when the
            heuristics (the float Placeholder; an op named ``logits``, ``output``, ...) do not apply.
        progress: show the current stage on stderr when it is a terminal.
        force: replace existing ``report_file`` / ``plot`` files (else refused before any work).
        hf_config: ``source`` is an original TF1 checkpoint converted with ``--hf-config`` (this config):
            transformers 4.x's own ``load_tf_weights_in_<model>`` reads it into OUT's class, the reference
            (``run_original``), per output and hidden state.

    Returns:
        A ``VerifyResult``: ``ok``, ``first_diverging``, ``rows``; ``render()``, ``to_json()``.

    Example:
        >>> result = verify("fixtures/keras3/cnn.keras", "out")
        >>> result.ok, [r.name for r in result.rows][:2]
        (True, ['conv1', 'bn1'])
    """
    source, out_dir = Path(source), Path(out_dir)
    if atol < 0 or rtol < 0:
        raise UsageError(f"atol={atol}, rtol={rtol}: tolerances must be >= 0")
    if plot is not None:
        plotting.check()  # before the long part
    for target in (report_file, plot):  # likewise: refuse to replace a file without --force now, not later
        if target is not None:
            check_file_target(Path(target), force)
    if hf_config is not None or _is_hf_repo(source):
        refused = {"--input-shape": input_shape, "--tf-input": tf_inputs, "--tf-output": tf_outputs}
        given = next((flag for flag, value in refused.items() if value), None)
        if given is not None:
            raise UsageError(f"{given} does not apply to a transformers repository: the inputs are built from its "
                             f"config (or --inputs FILE.npz, by name); drop {given}")
        with _Stages(progress) as stage:
            stage("running both transformers models")
            if hf_config is not None:
                from .run_original import verify_checkpoint

                result = verify_checkpoint(source, out_dir, Path(hf_config), inputs=inputs, atol=atol, rtol=rtol,
                                           seed=seed)
            else:
                from .run_hf import verify_repo

                result = verify_repo(source, out_dir, inputs=inputs, atol=atol, rtol=rtol, seed=seed)
    else:
        result = _verify_model(source, out_dir, input_shape, inputs, atol, rtol, seed, tuple(tf_inputs),
                               tuple(tf_outputs), progress)
    if report_file is not None:
        try:
            with atomic_write_file(Path(report_file), force) as staging:  # all or nothing
                staging.write_text(result.dumps(), encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"--report {report_file}: cannot write ({exc.strerror or exc})") from None
    if plot is not None:
        plotting.write_plot(result, Path(plot), force)
    return result


def _is_hf_repo(source: Path) -> bool:
    from ..hf import is_repo

    return is_repo(source)


def _verify_model(source: Path, out_dir: Path, input_shape: tuple[int, ...] | None, inputs: Any, atol: float,
                  rtol: float, seed: int, tf_inputs: tuple[str, ...], tf_outputs: tuple[str, ...],
                  progress: bool) -> VerifyResult:
    """A Keras model, TF1 graph or SavedModel against OUT's model.py, per layer."""
    outdir = read_outdir(out_dir)
    with _Stages(progress) as stage:
        stage("loading the TensorFlow model")
        ref = _reference(source, outdir, tf_inputs, tf_outputs)
        data = make_inputs(ref.input_specs(), input_shape, inputs, seed)
        stage("running TensorFlow")
        with full_float32(import_tf()) if ref.kind != "tflite" else nullcontext():  # LiteRT runs on the CPU
            tf_run = ref.run(data.tf)
        stage("loading the PyTorch model")
        model = run_torch.load_model(out_dir)
        stage("running PyTorch")
        torch_run = run_torch.run(model, data.torch, [p.module for p in ref.probes if not p.skip])
        stage("comparing")
        rows = _layer_rows(ref.probes, tf_run, torch_run, atol, rtol)
        rows += _output_rows(outdir, tf_run, torch_run.outputs, data.layouts, atol, rtol)
    first = first_diverging(rows)
    return VerifyResult(source=str(source), out_dir=str(out_dir), source_kind=ref.kind, mode=outdir.mode,
                          atol=atol, rtol=rtol, inputs=data.described, rows=rows, ok=verdict(rows),
                          first_diverging=first.name if first else None, notes=list(getattr(ref, "notes", [])))


def _reference(source: Path, outdir: OutDir, tf_inputs: tuple[str, ...], tf_outputs: tuple[str, ...]) -> Any:
    """The TF-side runner for the kind of ``source``."""
    from ..readers.detect import Kind, detect

    kind, where = detect(source)
    if (tf_inputs or tf_outputs) and kind not in (Kind.CHECKPOINT, Kind.GRAPH_DEF):
        raise UsageError("--tf-input / --tf-output name tensors of a TF1 graph; "
                         f"{source} is a {kind.value}, whose inputs and outputs are known")
    if kind is Kind.CHECKPOINT:
        from .run_tf1 import MetaGraphReference

        return MetaGraphReference(where, outdir, tf_inputs, tf_outputs)
    if kind is Kind.GRAPH_DEF:
        from .run_graph import FrozenGraphReference

        return FrozenGraphReference(where, outdir, tf_inputs, tf_outputs)
    if kind is Kind.SAVED_MODEL:
        from .run_savedmodel import SavedModelReference

        return SavedModelReference(where, outdir)
    if kind is Kind.TASK:
        raise UsageError(f"{source}: verify runs one .tflite model; extract the bundle's model (`tf2torch inspect "
                         f"{source.name}` lists them) and verify it against its OUTDIR/<name>")
    if kind is Kind.TFLITE:
        from .run_tflite import LiteReference

        return LiteReference(where, outdir)
    from ..readers.detect import read
    from .run_tf import KerasReference

    spec = read(Path(where))
    if spec.graph is None:
        raise UsageError(f"{source}: holds weights only; verify needs the whole model (model.save(...)) to run "
                         "it in TensorFlow")
    return KerasReference(where, spec.graph, outdir)


def _layer_rows(probes, tf_run: TFRun, torch_run: run_torch.TorchRun, atol: float, rtol: float) -> list[Row]:
    rows = []
    for p in probes:
        if p.skip:
            rows.append(skipped_row(p.name, p.tf, p.module, p.skip))
            continue
        expected = tf_run.layers.get(p.name)
        actual = torch_run.captured.get(p.module)
        note = torch_run.missing.get(p.module, "")
        if actual is not None and expected is not None:
            actual = align(actual, tuple(expected.shape), p.prefer)
            if p.activation:
                actual = ACTIVATIONS[p.activation](actual.astype(np.float64))
                note = f"Keras's {p.activation!r} (fused into the layer) applied to the module's output"
        rows.append(compare_row(p.name, "layer", p.tf, p.module, actual, expected, atol, rtol, note=note))
    return rows


def _output_rows(outdir: OutDir, tf_run: TFRun, torch_outputs, input_layouts: list[str], atol: float,
                 rtol: float) -> list[Row]:
    iface = [o for o in outdir.interface.get("outputs") or [] if isinstance(o, dict)]
    rows = []
    for i in range(max(len(tf_run.outputs), len(torch_outputs))):
        expected = tf_run.outputs[i] if i < len(tf_run.outputs) else None
        actual = torch_outputs[i] if i < len(torch_outputs) else None
        tf_name = tf_run.output_names[i] if i < len(tf_run.output_names) else "-"
        note = ""
        if expected is None or actual is None:
            note = (f"TensorFlow returns {len(tf_run.outputs)} outputs, the PyTorch model "
                    f"{len(torch_outputs)}")
        elif i < len(iface):  # a generated model says how each output crosses the interface
            if interface.moves_axes(iface[i].get("layout", interface.KERAS), actual.ndim):
                actual = align(actual, tuple(expected.shape), "cf")
        else:  # the user's model: images are channels-first like its inputs, else the shape decides
            cf_inputs = any(layout == CHANNELS_FIRST for layout in input_layouts)
            actual = align(actual, tuple(expected.shape), "cf" if cf_inputs else "keras")
        rows.append(compare_row(f"output_{i}", "output", tf_name, f"output_{i}", actual, expected, atol, rtol, note))
    return rows


class _Stages:
    """The current stage on stderr, only on a terminal; the line is cleared at the end."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.shown = False

    def __enter__(self) -> _Stages:
        return self

    def __call__(self, text: str) -> None:
        if self.enabled:
            sys.stderr.write(f"\rverify: {text}...\033[K")
            sys.stderr.flush()
            self.shown = True

    def __exit__(self, *exc: object) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
