"""The public Python API: ``read``, ``convert`` (and ``verify`` in ``tf2torch.verify``).

The CLI is a thin layer over these functions. Heavy imports (torch, TensorFlow) happen inside the
functions that need them, so ``import tf2torch`` stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import dtypes, interface
from .errors import MappingError, UnsupportedError, UsageError
from .map.account import Report
from .spec import Format, ModelSpec
from .write.plan import TensorPlan

WEIGHT_FORMATS = {"safetensors": "model.safetensors", "pt": "model.pt"}


def read(path: str | Path, *, verify_crc: bool = True, config: str | Path | None = None) -> ModelSpec:
    """Read any supported source into a ``ModelSpec`` (variables, and the architecture if present).

    Args:
        path: a checkpoint prefix (or its ``.index``), a directory with a ``checkpoint`` file or a
            SavedModel, a Keras ``.h5`` / ``.keras`` / ``.weights.h5`` file.
        verify_crc: check the CRC32C of every tensor as it is read (TF bundles).
        config: a Keras ``model.to_json()`` file giving the architecture of a checkpoint or SavedModel.

    Returns:
        A ``ModelSpec``; tensor data is read lazily by ``Variable.read()``.

    Example:
        >>> spec = tf2torch.read("fixtures/tf1/model.ckpt")
        >>> [v.name for v in spec][:2]
        ['bn1/BatchNorm/beta', 'bn1/BatchNorm/beta/Adam']
    """
    from .readers import detect as _detect

    kind, where = _detect.detect(Path(path))
    if kind is _detect.Kind.CHECKPOINT:
        from .readers.checkpoint import read_checkpoint

        spec = read_checkpoint(where, verify_crc=verify_crc)
    elif kind is _detect.Kind.SAVED_MODEL:
        from .readers.checkpoint import read_savedmodel, savedmodel_keras_metadata

        spec = read_savedmodel(where, verify_crc=verify_crc)
        metadata = savedmodel_keras_metadata(where) if config is None else None
        if metadata:  # a tf_keras SavedModel carries its architecture in keras_metadata.pb
            from .readers.with_config import from_keras_metadata

            spec = from_keras_metadata(spec, metadata)
    elif kind is _detect.Kind.GRAPH_DEF:
        from .readers.graph.frozen import read_graph_def

        spec = read_graph_def(where)
    elif kind is _detect.Kind.KERAS_H5:
        from .readers.keras_h5 import read_keras_h5

        spec = read_keras_h5(where)
    else:
        from .readers.keras_zip import read_keras_zip

        spec = read_keras_zip(where)
    if config is not None:
        from .readers.with_config import attach_config

        spec = attach_config(spec, Path(config))
    return spec


@dataclass
class Conversion:
    """What ``convert`` did: the report, the plans it wrote (or would write), and the files."""

    report: Report
    plans: list[TensorPlan]
    model_source: str | None  # model.py text (None for a bare state_dict)
    out_dir: Path | None  # None for a dry run
    files: list[str] = field(default_factory=list)
    taps: dict[str, str] = field(default_factory=dict)  # Keras layer -> module path (for verify)


def convert(
    source: str | Path,
    out_dir: str | Path | None,
    *,
    model: str | None = None,
    config: str | Path | None = None,
    rules: str | Path | None = None,
    weights_format: str = "safetensors",
    dtype: str | None = None,
    ema: bool = False,
    strict: bool = False,
    keep_names: bool = False,
    transpose: bool = True,
    input_shape: tuple[int, ...] | None = None,
    tf_padding: str | None = None,
    channels_last: bool = False,
    flat: bool = False,
    force: bool = False,
    dry_run: bool = False,
    verify_crc: bool = True,
    allow_missing: tuple[str, ...] = (),
    allow_unexpected: tuple[str, ...] = (),
    report_path: str | Path | None = None,
    weights_only: bool = False,
    graph_outputs: tuple[str, ...] = (),
    signature: str | None = None,
    progress: Callable[[TensorPlan, int], None] | None = None,
    hf_class: str | None = None,
) -> Conversion:
    """Convert a TF/Keras source into ``out_dir``: weights, ``model.py`` (when there is a model) and
    ``report.json``.

    Three modes: onto the user's PyTorch model (``model="wrn.py:WideResNet"``), a generated model
    (Keras sources), or a bare state_dict (a checkpoint with no architecture).

    Args:
        source: anything ``read`` accepts.
        out_dir: output directory; refused if it exists and is not empty, unless ``force``.
        model: ``FILE.py:CALLABLE`` of the user's PyTorch model (class or zero-argument factory).
        rules: a TOML rules file (renames, explicit pairs, skips, layouts, padding overrides).
        weights_format: "safetensors" (default) or "pt".
        dtype: cast float tensors ("float32", "float16", "bfloat16"); default keeps each dtype.
        ema: use ExponentialMovingAverage shadows in place of the raw variables.
        strict: fail when anything is unexpected or missing (shape mismatches always fail).
        input_shape: the model's input shape in its input layout (e.g. (1, 3, 32, 32)), for static
            SAME padding; without it, padding is computed at run time where it depends on the size.
        tf_padding: "same" to treat every conv/pool whose padding is the symmetric k//2 guess as a port
            of TF 'SAME' (user models without a TF graph).
        flat: generated models with one module per Keras layer; by default the repeated blocks of a Keras
            graph (layers named with one prefix, ``block2a_*``) are one class per kind, chained in
            ``nn.Sequential`` stages (codegen/blocks/).
        dry_run: plan everything, write nothing (but ``report_path``).
        allow_missing: regexes of state_dict keys that may keep their initial values (the contract
            otherwise fails on any missing key the forward pass uses).
        allow_unexpected: regexes of source variables that may stay unused.
        weights_only: a Keras file whose model tf2torch cannot generate (subclassed, keras-hub):
            write its weights as a bare state_dict anyway, instead of refusing.
        graph_outputs: a TF graph's (frozen .pb, .meta) output nodes; default: the ops fed by its float
            placeholders that feed nothing else.
        signature: a SavedModel's signature to convert (default ``serving_default``).
        report_path: also write report.json here; a failed conversion writes it here, or without it
            beside ``out_dir`` as ``OUTDIR.failed-report.json``.
        hf_class: a transformers repository (a directory with config.json and tf_model.h5) converts into
            one with PyTorch weights (tf2torch.hf); this names its PyTorch class (default: from the config).
        progress: called as ``progress(plan, nbytes)`` after each tensor is written; when it also has
            an ``expect(total_bytes, tensors)`` method (``tf2torch.progress.Progress`` does), that is
            called first, with the totals.

    Returns:
        A ``Conversion``.

    Example:
        >>> result = tf2torch.convert("fixtures/keras3/cnn.keras", "out")
        >>> sorted(result.files)
        ['model.py', 'model.safetensors', 'report.json']
    """
    from . import hf

    if model is None and (hf_class is not None or hf.is_repo(source)):  # a transformers repo in, one out
        from .hf.convert import convert_repo

        return convert_repo(source, out_dir, hf_class=hf_class, dtype=dtype, force=force, dry_run=dry_run,
                            report_path=report_path, progress=progress)
    if weights_format not in WEIGHT_FORMATS:
        raise UsageError(f"weights format {weights_format!r}: expected one of {', '.join(WEIGHT_FORMATS)}")
    out_dtype = dtypes.by_name(dtype) if dtype else None
    if out_dtype is not None and not out_dtype.is_float:
        raise UsageError(f"--dtype {dtype}: expected float32, float16, bfloat16 or float64")
    from .map.rules import NO_RULES, load_rules

    rule_set = load_rules(Path(rules)) if rules else NO_RULES
    spec = read(source, verify_crc=verify_crc, config=config)
    weights_name = WEIGHT_FORMATS[weights_format]
    taps: dict[str, str] = {}
    graph_note = ""
    if model is None and spec.graph is None and spec.tf_graph is not None and not weights_only:
        # A TF graph becomes layers, converted like a Keras model. A checkpoint's graph may hold no
        # model at all (only variables, or a data pipeline feeding them): then its weights are all there is.
        # A frozen graph is nothing but its model; a checkpoint's .meta or a SavedModel without
        # signatures may hold none (then its weights are what it has).
        required = spec.format is Format.GRAPH_DEF or bool(graph_outputs) or signature is not None
        lowered = _lower(spec, graph_outputs, required=required, ema=ema, signature=signature,
                         input_shape=input_shape, channels_last=channels_last)
        if lowered is None:
            graph_note = ("the graph has no model (no signature, no Placeholder feeding a weight): "
                          "wrote a bare state_dict")
        spec = lowered or spec
    if model is not None:
        from .rewrite.patch import convert_onto_model

        plans, report, model_source = convert_onto_model(
            spec, model, rules=rule_set, ema=ema, dtype=out_dtype, input_shape=input_shape,
            tf_padding=tf_padding, weights_name=weights_name)
    elif spec.graph is not None:
        from .layers import assemble
        from .layers.graph import Options

        # --input-shape stays in the generated model's layout: the converter translates it as it lays out the input
        options = Options(channels_last=channels_last, blocks=not flat,
                          input_shape=tuple(input_shape) if input_shape is not None else None)
        result = assemble.convert_keras(spec, options, weights_name=weights_name, ema=ema, dtype=out_dtype)
        plans, report, model_source, taps = result.plans, result.report, result.source, result.taps
    else:
        if spec.unconverted and not weights_only:  # never a silent bare state_dict for a model file
            raise UnsupportedError(spec.unconverted)
        from .map.plan import bare

        plans, report = bare(spec, rules=rule_set, ema=ema, keep_names=keep_names, no_transpose=not transpose,
                             dtype=out_dtype)
        if graph_note:
            report.notes.append(graph_note)
        model_source = None
    report.allow("missing", tuple(allow_missing), "--allow-missing")
    report.allow("unexpected", tuple(allow_unexpected), "--allow-unexpected")
    problems = report.problems(strict)
    if problems:
        where = _write_failed_report(report, out_dir, report_path, force)
        error = MappingError(f"{source}: " + "; ".join(problems) + (f" (full report: {where})" if where else ""))
        error.report = report  # for --suggest-rules
        raise error
    if report_path is not None:
        from .write.output import write_report_file

        write_report_file(Path(report_path), report, failed=False, force=force)
    conversion = Conversion(report, plans, model_source, None if dry_run else Path(out_dir) if out_dir else None,
                            taps=taps)
    if dry_run:
        return conversion
    if out_dir is None:
        raise UsageError("convert needs an output directory (-o OUTDIR) unless --dry-run")
    from .write.output import write_outputs

    conversion.files = write_outputs(Path(out_dir), plans, report, model_source, weights_format, taps,
                                     force=force, progress=progress)
    return conversion


def verify(source: str | Path, out_dir: str | Path, **options: Any):
    """Run ``source`` in TensorFlow and ``out_dir``'s converted model in PyTorch; compare per layer.

    Needs the ``tf`` extra. Keyword options as ``tf2torch.compare.verify`` (``input_shape``, ``inputs``,
    ``atol``, ``rtol``, ``seed``, ``report_file``, ``plot``, ``force``, ``tf_inputs``, ``tf_outputs``).

    Returns:
        A ``VerifyResult``: ``.ok``, ``.first_diverging``, per-layer ``.rows``, ``.to_json()``.

    Example:
        >>> tf2torch.verify("fixtures/keras3/cnn.keras", "out").ok
        True
    """
    from .compare import verify as _verify

    return _verify(source, out_dir, **options)


def _lower(spec: ModelSpec, outputs: tuple[str, ...], *, required: bool, ema: bool, signature: str | None,
           input_shape: tuple[int, ...] | None, channels_last: bool) -> ModelSpec | None:
    """A TF graph lowered to layers, its one input sized by ``input_shape`` (the generated model's layout).

    The lowering takes the shape in TF's layout, which for a rank-3 input depends on what its first
    consumer wants (tf2torch.interface), known only in the lowered graph: lowered with the guess from the
    rank, then again with the other layout when the lowered graph decides otherwise. The converter makes
    the same decision from the same graph and translates the shape the same way."""
    from .tfgraph.lower import lower

    if input_shape is None:
        return lower(spec, outputs, required=required, ema=ema, signature=signature)
    from .layers.graph_inputs import first_consumer_wants

    rank = len(input_shape)
    guess = interface.input_channels_first(rank, None, channels_last)
    ambiguous = rank == 3 and not channels_last
    error: Exception | None = None
    for cf in (guess, not guess) if ambiguous else (guess,):
        tf_shape = (None, *interface.keras_shape(tuple(input_shape), cf))
        try:
            lowered = lower(spec, outputs, required=required, ema=ema, signature=signature, input_shape=tf_shape)
        except UnsupportedError as exc:  # e.g. the shape read in this layout contradicts the placeholder's
            error = exc
            continue
        if lowered is None or lowered.graph is None or len(lowered.graph.inputs) != 1:
            return lowered  # no model, or not one input (the converter refuses --input-shape then)
        name = lowered.graph.inputs[0].layer
        if interface.input_channels_first(rank, first_consumer_wants(lowered.graph).get(name), channels_last) == cf:
            return lowered
    if error is not None:
        raise error
    raise UsageError(f"--input-shape {','.join(map(str, input_shape))}: the lowered graph's first layer takes its "
                     "input channels-first in one reading of the shape and in TF's layout in the other; pass "
                     "--channels-last and the shape in TF's layout")


def _write_failed_report(report: Report, out_dir, report_path, force: bool) -> Path | None:
    """The report of a conversion that failed the contract, so a CI job can show why; None if there
    is nowhere to put it (a dry run without --report) or it cannot be written (the error says why)."""
    from .errors import OutputError
    from .write.output import failed_report_path, write_report_file

    if report_path is None and out_dir is None:
        return None
    path = Path(report_path) if report_path is not None else failed_report_path(Path(out_dir))
    try:
        write_report_file(path, report, failed=True, force=force)
    except OutputError:
        return None  # e.g. --report names an existing file without --force: the mapping error stands
    return path
