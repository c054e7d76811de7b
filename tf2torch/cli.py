"""The ``tf2torch`` command: parse options, call one library function, print. Nothing else.

Exit codes (stable; documented in the README):
  0  success            1  conversion error (bad or unsupported input, unwritable output)
  2  usage error        3  numeric mismatch (verify)
Errors print one line to stderr, never a traceback (set TF2TORCH_DEBUG=1 to see one).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from .errors import MappingError, MismatchError, Tf2TorchError, UsageError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_MISMATCH = 0, 1, 2, 3


def exit_code(exc: BaseException) -> int:
    """The one place errors become exit codes."""
    if isinstance(exc, MismatchError):
        return EXIT_MISMATCH
    if isinstance(exc, (UsageError, click.UsageError)):
        return EXIT_USAGE
    return EXIT_ERROR


def _fail(exc: BaseException) -> NoReturn:
    if os.environ.get("TF2TORCH_DEBUG") == "1":
        raise exc
    if isinstance(exc, Tf2TorchError):
        message = str(exc)
    else:
        message = f"internal error: {type(exc).__name__}: {exc} (please report it; TF2TORCH_DEBUG=1 shows the traceback)"
    click.echo(f"tf2torch: error: {' '.join(message.splitlines())}", err=True)  # always one line
    sys.exit(exit_code(exc))


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def _shape(ctx: click.Context, param: click.Parameter, text: str | None) -> tuple[int, ...] | None:
    """The callback of --input-shape: "1,3,32,32" (or 1x3x32x32) as a tuple of positive sizes."""
    if text is None:
        return None
    try:
        dims = tuple(int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected comma-separated positive integers, e.g. 1,3,224,224") from None
    if not dims or min(dims) <= 0:
        raise click.BadParameter(f"{text!r}: sizes must be positive")
    return dims


PathArg = click.Path(path_type=Path)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tf2torch")
def main() -> None:
    """Port trained TensorFlow / Keras models to PyTorch so they compute the same numbers."""


@main.command()
@click.argument("source", type=PathArg)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--check", is_flag=True, help="Read every tensor and verify its CRC32C; list each bad tensor.")
@click.option("--no-verify-crc", is_flag=True, help="With --check: read without verifying checksums.")
def inspect(source: Path, as_json: bool, check: bool, no_verify_crc: bool) -> None:
    """List the variables (and layers) of SOURCE without reading tensor data."""
    from . import api, summary
    from .progress import Progress
    from .readers.tflite.task import is_task

    if is_task(source):  # a MediaPipe bundle: its members, the models among them
        try:
            _emit_json(summary.task_json(source)) if as_json else click.echo(summary.render_task(source))
        except Tf2TorchError as exc:
            _fail(exc)
        return
    try:
        spec = api.read(source, verify_crc=not no_verify_crc)
        result = summary.summarize(spec)
        if check:
            with Progress(total=sum(v.nbytes for v in spec.variables), unit="B", label="checking",
                          tensors=len(spec.variables)) as bar:
                summary.check(spec, result, on_variable=lambda v: bar.on_tensor(v, v.nbytes))
    except Tf2TorchError as exc:
        _fail(exc)
    _emit_json(result.to_json()) if as_json else click.echo(summary.render(result))
    if result.bad:
        sys.exit(EXIT_ERROR)


@main.command()
@click.argument("source", type=PathArg)
@click.option("-o", "--out", "out_dir", type=PathArg, help="Output directory (refused if not empty, see --force).")
@click.option("--model", "model", metavar="FILE.py:CALLABLE", help="Your PyTorch model: map onto its state_dict.")
@click.option("--config", type=PathArg, help="Keras model JSON (model.to_json()) for a checkpoint/SavedModel.")
@click.option("--rules", type=PathArg, help="TOML rules file: renames, pairs, skips, layouts, padding.")
@click.option("--format", "weights_format", type=click.Choice(["safetensors", "pt"]), default="safetensors",
              show_default=True, help="Weights file format.")
@click.option("--dtype", type=click.Choice(["float32", "float16", "bfloat16", "float64"]),
              help="Cast float tensors (default: keep each tensor's dtype).")
@click.option("--ema", is_flag=True, help="Use ExponentialMovingAverage shadows instead of raw variables.")
@click.option("--strict", is_flag=True, help="Fail when any variable is unexpected or any key missing.")
@click.option("--allow-missing", multiple=True, metavar="PATTERN",
              help="State_dict keys (regex) that may keep their initial values; repeatable.")
@click.option("--allow-unexpected", multiple=True, metavar="PATTERN",
              help="Source variables (regex) that may stay unused; repeatable.")
@click.option("--report", "report_path", type=PathArg,
              help="Also write report.json here (on failure too; default on failure: OUT.failed-report.json).")
@click.option("--suggest-rules", is_flag=True,
              help="Print a rules file (TOML) that settles what matching leaves open; write nothing else.")
@click.option("--weights-only", is_flag=True,
              help="Write the weights only, as a bare state_dict: for a model file tf2torch cannot generate "
                   "PyTorch for, or a checkpoint whose .meta graph is not to be converted.")
@click.option("--graph-output", "graph_outputs", multiple=True, metavar="NODE",
              help="A TF graph's output node (default: the ops its float inputs feed last); repeatable.")
@click.option("--signature", metavar="NAME", help="A SavedModel's signature to convert (default: serving_default).")
@click.option("--member", metavar="NAME", help="A .task bundle's model to convert into OUT (default: every model, "
              "each into OUT/<name>/; `inspect` lists them).")
@click.option("--dequantize", is_flag=True, help="A quantized .tflite model: its float form (weights dequantized, "
              "float compute) instead of the emulation of LiteRT's integer kernels; verify measures the distance.")
@click.option("--keep-names", is_flag=True, help="Bare checkpoints: keep TF names ('/' becomes '.').")
@click.option("--no-transpose", "transpose", flag_value=False, default=True, help="Bare checkpoints: keep TF layouts.")
@click.option("--input-shape", callback=_shape,
              help="Input shape in the model's input layout, e.g. 1,3,32,32 (static padding).")
@click.option("--tf-padding", type=click.Choice(["same", "none"]),
              help="--model without a TF graph: treat symmetric k//2 padding as a port of TF 'SAME'.")
@click.option("--channels-last", is_flag=True, help="Generated models take and return TF's NHWC layout.")
@click.option("--flat", is_flag=True,
              help="Generated models: one module per Keras layer (default: a class per kind of repeated block).")
@click.option("--hf-class", metavar="CLASS", help="A transformers repo (config.json + tf_model.h5): the PyTorch "
              "class to write for (default: the config's architecture without 'TF').")
@click.option("--hf-config", type=PathArg, help="An original TF1 checkpoint (Google BERT, ALBERT, ELECTRA, GPT-2, "
              "T5...) into a transformers repo: its config.json or the release's bert_config.json-style file.")
@click.option("--force", is_flag=True, help="Replace an existing output directory.")
@click.option("--dry-run", is_flag=True, help="Print the plan (every mapping and transform); write nothing.")
@click.option("--no-verify-crc", "verify_crc", flag_value=False, default=True,
              help="Do not verify tensor checksums (faster; not recommended).")
@click.option("--verify", "run_verify", is_flag=True, help="Run `tf2torch verify` right after converting.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Print the full report on success.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no warnings.")
def convert(source: Path, out_dir: Path | None, suggest_rules: bool, run_verify: bool, as_json: bool, verbose: bool,
            quiet: bool, **fields: Any) -> None:
    """Convert SOURCE into OUT: weights, model.py and report.json."""
    # Every other option is named after its ConvertOptions field: they travel as one object, not by hand.
    from . import api
    from .options import ConvertOptions
    from .progress import Progress

    if out_dir is None and not fields["dry_run"] and not suggest_rules:
        raise click.UsageError("missing -o/--out OUTDIR (or pass --dry-run)")
    try:
        options = ConvertOptions(**fields)
        if suggest_rules:
            _suggest_rules(source, options)
            return
        with Progress(unit="B", label="converting", enabled=not quiet) as bar:
            result = api.convert(source, out_dir, options, progress=bar)
    except Tf2TorchError as exc:
        _fail(exc)
    reports = {name: c.report for name, c in result.members.items()} or {"": result.report}  # a .task: each model's
    if as_json:
        _emit_json(result.report.to_json() if "" in reports else {n: r.to_json() for n, r in reports.items()})
    for name, report in reports.items() if not as_json else ():
        if name and (options.dry_run or verbose or not quiet):
            click.echo(f"== {name} ({out_dir / name if out_dir else 'dry run'})", err=not (options.dry_run or verbose))
        if options.dry_run or verbose:
            click.echo(report.render(verbose=True))
        elif not quiet:
            attention = [e for e in report.entries if e.status in ("unexpected", "missing") and not e.allowed]
            if attention:  # quiet on a clean success; the full report is in OUTDIR/report.json
                click.echo(report.render(verbose=False), err=True)
    if run_verify and not options.dry_run:
        ctx = click.get_current_context()
        ctx.invoke(verify, source=source, out_dir=out_dir, input_shape=options.input_shape, quiet=quiet,
                   as_json=False, hf_config=options.hf_config)


def _suggest_rules(source: Path, options: Any) -> None:
    """Print the rules (TOML) that settle what matching leaves open: a dry run that writes nothing, not
    even a failed report, and proposes from the report its ``MappingError`` carries."""
    from dataclasses import replace

    from . import api
    from .map.suggest import suggest

    if api.hf_route(source, options) is not None:
        raise UsageError("--suggest-rules does not apply to a transformers repository or --hf-config: names are "
                         "matched by the transformers convention, with no rules; drop --suggest-rules")
    try:
        api.convert(source, None, replace(options, dry_run=True, report_path=None, strict=False))
    except MappingError as exc:
        if exc.report is None:
            raise
        click.echo(suggest(exc.report), nl=False)
        return
    click.echo("# tf2torch --suggest-rules: the conversion needs no rules")


@main.command()
@click.argument("source", type=PathArg)
@click.argument("out_dir", type=PathArg)
@click.option("--input-shape", callback=_shape, help="Input shape (in the PyTorch model's layout), e.g. 1,3,32,32.")
@click.option("--inputs", type=PathArg, help="Inputs as .npy (one input) or .npz (by input name).")
@click.option("--atol", type=float, default=1e-4, show_default=True)
@click.option("--rtol", type=float, default=1e-4, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--report", "report_file", type=PathArg, help="Also write the JSON verdict to this file.")
@click.option("--plot", type=PathArg, help="PNG of the per-layer max abs difference (needs matplotlib).")
@click.option("--force", is_flag=True, help="Replace existing --report / --plot files.")
@click.option("--tf-input", "tf_inputs", multiple=True, metavar="NAME",
              help="TF1 graphs: the input placeholder (repeat for several, in the PyTorch forward's order).")
@click.option("--tf-output", "tf_outputs", multiple=True, metavar="NAME",
              help="TF1 graphs: the output tensor (default: an op named logits, output, predictions, ...).")
@click.option("--hf-config", type=PathArg, help="SOURCE is an original TF1 checkpoint converted with --hf-config: "
              "the same config; transformers 4.x's own loader of it is the reference.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
def verify(source: Path, out_dir: Path, input_shape: tuple[int, ...] | None = None, inputs: Path | None = None,
           atol: float = 1e-4, rtol: float = 1e-4, seed: int = 0, report_file: Path | None = None,
           plot: Path | None = None, tf_inputs: tuple[str, ...] = (), tf_outputs: tuple[str, ...] = (),
           as_json: bool = False, quiet: bool = False, force: bool = False, hf_config: Path | None = None) -> None:
    """Run SOURCE in TensorFlow and OUT_DIR's model in PyTorch on the same inputs; compare per layer."""
    from .compare import run as verify_run

    try:
        result = verify_run.verify(source, out_dir, input_shape=input_shape, inputs=inputs, atol=atol,
                                   rtol=rtol, seed=seed, report_file=report_file, plot=plot, tf_inputs=tf_inputs,
                                   tf_outputs=tf_outputs, progress=not quiet and not as_json, force=force,
                                   hf_config=hf_config)
    except Tf2TorchError as exc:
        _fail(exc)
    if as_json:
        _emit_json(result.to_json())
    elif not quiet or not result.ok:
        click.echo(result.render(), err=not result.ok)
    if not result.ok:
        sys.exit(EXIT_MISMATCH)


@main.command()
@click.option("--tf-ops", is_flag=True, help="List the TF op types a graph (.pb, .meta, SavedModel) may use.")
@click.option("--tflite-ops", is_flag=True, help="List the TFLite builtin operators a .tflite model may use.")
@click.option("--tflite-int8-ops", "tflite_int", flag_value="int8",
              help="List the TFLite operators a full-integer int8 model may use (LiteRT's integer kernels, emulated).")
@click.option("--tflite-int16-ops", "tflite_int", flag_value="int16",
              help="The same for int16 activations (16x8 models).")
@click.option("--tflite-uint8-ops", "tflite_int", flag_value="uint8", help="The same for uint8 activations.")
@click.option("--keras-hub", "keras_hub", is_flag=True,
              help="List the keras-hub model classes whose Backbone.save() files tf2torch generates PyTorch for.")
@click.option("--refused", is_flag=True, help="List the keras.layers classes tf2torch refuses, each with why.")
def layers(tf_ops: bool, tflite_ops: bool, tflite_int: str | None, keras_hub: bool, refused: bool) -> None:
    """List the Keras layer classes tf2torch converts (--tf-ops: the TF graph op types; --tflite-ops: the
    TFLite operators; --tflite-int8-ops, -int16-ops, -uint8-ops: those on integer activations; --keras-hub: the
    keras-hub models; --refused: the Keras classes it refuses, and why). Any other class is refused by
    name, never converted approximately."""
    if refused:
        from .layers.refused import REFUSED

        click.echo("\n".join(f"{name}: {why}; {fix}" for name, (why, fix) in sorted(REFUSED.items())))
        return
    if keras_hub:
        from .families.keras_hub.common import args as hub

        click.echo("\n".join(hub.supported()))
        return
    if tf_ops:
        from .tfgraph import lower  # importing it registers every TF-op converter

        click.echo("\n".join(lower.supported_ops()))
        return
    if tflite_ops:
        from .tflite import lower as lite  # importing it registers every TFLite-operator converter

        click.echo("\n".join(lite.supported_ops()))
        return
    if tflite_int:
        from .tflite import lower as lite

        click.echo("\n".join(lite.supported_int_ops(tflite_int)))
        return
    from .layers import registry  # importing tf2torch.layers registers every converter

    # (classes named "tf2torch>..." are what lowered TF graphs use internally, not Keras classes)
    click.echo("\n".join(c for c in registry.supported() if not c.startswith("tf2torch>")))


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM (CI timeouts, kill): unwind like Ctrl-C so staged output is removed


def run() -> None:
    """Entry point with the one error net: click's own usage errors exit 2, anything else is reported."""
    signal.signal(signal.SIGTERM, _terminate)
    # tf2torch makes no BLAS calls; numpy's OpenBLAS would still start (and spin) a thread per core at
    # import, ~60 ms of a 2-core machine. An explicit setting by the user wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        main.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:  # click turns Ctrl-C / SIGTERM (see _terminate) inside a command into Abort
        click.echo("tf2torch: interrupted; no output was left behind", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_USAGE if isinstance(exc, click.UsageError) else EXIT_ERROR)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        click.echo("tf2torch: interrupted; no output was left behind", err=True)
        sys.exit(130)
    except BaseException as exc:  # a bug: one line, no traceback (TF2TORCH_DEBUG=1 for it)
        _fail(exc)
