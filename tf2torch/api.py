"""The public Python API: ``read``, ``convert`` (and ``verify`` in ``tf2torch.verify``).

``convert`` is the dispatcher: read the source (``readers.detect.read``), run the mode that fits
(``tf2torch.pipelines``), check the contract once (``pipelines.contract``), write. The CLI is a thin layer
over these functions. Heavy imports (torch, TensorFlow) happen inside the
functions that need them, so ``import tf2torch`` stays cheap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import UsageError
from .options import WEIGHT_FORMATS, ConvertOptions
from .pipelines import Conversion
from .plan import TensorPlan
from .spec import Format, ModelSpec

__all__ = ["WEIGHT_FORMATS", "Conversion", "ConvertOptions", "convert", "read", "verify"]


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
    from .readers.detect import read as read_source  # the readers' own dispatch, by detected format

    return read_source(Path(path), verify_crc=verify_crc, config=Path(config) if config is not None else None)


def convert(
    source: str | Path,
    out_dir: str | Path | None,
    options: ConvertOptions | None = None,
    *,
    progress: Callable[[TensorPlan, int], None] | None = None,
    **kwargs: Any,
) -> Conversion:
    """Convert a TF/Keras source into ``out_dir``: weights, ``model.py`` (when there is a model) and
    ``report.json``.

    Four modes (``tf2torch.pipelines``): onto the user's PyTorch model (``model="wrn.py:WideResNet"``), a
    generated model (Keras sources, and TF graphs lowered to layers), or a bare state_dict (a checkpoint
    with no architecture). The options are a ``ConvertOptions`` (what the CLI builds), or keyword
    arguments of the same names, or both (the keywords then change the given options).

    Args:
        source: anything ``read`` accepts.
        out_dir: output directory; refused if it exists and is not empty, unless ``force``.
        options: a ``tf2torch.options.ConvertOptions``; default: every option at its default.

    Keyword options (the fields of ``ConvertOptions``):
        model: ``FILE.py:CALLABLE`` of the user's PyTorch model (class or zero-argument factory).
        config: a Keras ``model.to_json()`` file giving the architecture of a checkpoint or SavedModel.
        rules: a TOML rules file (renames, explicit pairs, skips, layouts, padding overrides).
        weights_format: "safetensors" (default) or "pt".
        dtype: cast float tensors ("float32", "float16", "bfloat16"); default keeps each dtype.
        ema: use ExponentialMovingAverage shadows in place of the raw variables.
        strict: fail when anything is unexpected or missing (shape mismatches always fail).
        keep_names: bare state_dicts keep TF names ('/' becomes '.'); transpose=False keeps TF layouts.
        input_shape: the model's input shape in its input layout (e.g. (1, 3, 32, 32)), for static
            SAME padding; without it, padding is computed at run time where it depends on the size.
        tf_padding: "same" to treat every conv/pool whose padding is the symmetric k//2 guess as a port
            of TF 'SAME' (user models without a TF graph).
        channels_last: generated models take and return TF's channels-last layout.
        flat: generated models with one module per Keras layer; by default the repeated blocks of a Keras
            graph (layers named with one prefix, ``block2a_*``) are one class per kind, chained in
            ``nn.Sequential`` stages (codegen/blocks/).
        dry_run: plan everything, write nothing (but ``report_path``); force: replace existing output.
        verify_crc: check the CRC32C of every tensor as it is read (TF bundles).
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
        hf_config: an original TF1 checkpoint (google-research BERT, ALBERT, ELECTRA, OpenAI GPT-2, mesh-TF
            T5) converts into a transformers repository (tf2torch.hf.original); this is its model config
            (a transformers config.json or the release's own); ``hf_class`` picks the class.
        dequantize: a quantized ``.tflite`` model (int8 weights, or int8 everywhere) as its trainable float
            model: weights dequantized to float32, QUANTIZE / DEQUANTIZE dropped, float compute (by default a
            dynamic-range model is an emulation of LiteRT's integer arithmetic and a full-integer one is refused).

    Args (not an option: how to watch, not what to convert):
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

    options = ConvertOptions.build(options, **kwargs)
    route = hf_route(source, options)
    if route == "checkpoint" and options.model is not None:
        raise UsageError("--hf-config writes a transformers repository; --model maps onto your own model: "
                         "pass one of them")
    if route is not None:
        from .hf import inapplicable

        inapplicable.check(options, route)  # an option the route would ignore is refused, by name
    if route == "checkpoint":
        # an original TF1 checkpoint (Google's, OpenAI's, mesh-TF's names) in, a transformers repo out
        from .hf.original.convert import convert_checkpoint

        return convert_checkpoint(source, out_dir, options.hf_config, hf_class=options.hf_class,
                                  dtype=options.dtype, force=options.force, dry_run=options.dry_run,
                                  report_path=options.report_path, verify_crc=options.verify_crc, progress=progress)
    if route == "repo":
        # a transformers repository in, one out: its own reader and writer (tf2torch.hf), the same contract
        from .hf.convert import convert_repo

        return convert_repo(source, out_dir, hf_class=options.hf_class, dtype=options.dtype, force=options.force,
                            dry_run=options.dry_run, report_path=options.report_path, progress=progress)
    options.rule_set  # noqa: B018  (loaded before the source is read: a bad rules file fails first)
    from .readers.tflite.task import is_task

    if is_task(Path(source)):
        return _convert_task(Path(source), out_dir, options, progress)
    if options.member is not None:
        raise UsageError(f"{source}: --member chooses a model of a MediaPipe .task bundle; this is none")
    spec = read(source, verify_crc=options.verify_crc, config=options.config)
    return _convert_spec(spec, source, out_dir, options, progress)


def _convert_spec(spec: ModelSpec, source: str | Path, out_dir: str | Path | None, options: ConvertOptions,
                  progress: Callable[[TensorPlan, int], None] | None) -> Conversion:
    from . import pipelines
    from .pipelines.contract import enforce

    if options.dequantize and spec.format is not Format.TFLITE:
        raise UsageError(f"{source}: --dequantize applies to quantized .tflite models; this is {spec.format.value}")

    if options.model is not None and spec.format is Format.TF1_CHECKPOINT:
        # an original release's checkpoint onto a transformers class: its convention names the weights
        from .hf.original.user import run as onto_transformers

        outcome = onto_transformers(spec, options)
    else:
        outcome = pipelines.run(spec, options)
    enforce(outcome.report, options, source, out_dir)
    if options.report_path is not None:
        from .write.output import write_report_file

        write_report_file(Path(options.report_path), outcome.report, failed=False, force=options.force)
    written = None if options.dry_run or out_dir is None else Path(out_dir)
    conversion = Conversion(outcome.report, outcome.plans, outcome.model_source, written, taps=outcome.taps)
    if options.dry_run:
        return conversion
    if out_dir is None:
        raise UsageError("convert needs an output directory (-o OUTDIR) unless --dry-run")
    from .write.output import write_outputs

    conversion.files = write_outputs(Path(out_dir), outcome.plans, outcome.report, outcome.model_source,
                                     options.weights_format, outcome.taps, force=options.force, progress=progress)
    return conversion


def _convert_task(source: Path, out_dir: str | Path | None, options: ConvertOptions,
                  progress: Callable[[TensorPlan, int], None] | None) -> Conversion:
    """A MediaPipe bundle: the ``--member`` model into ``out_dir``, or every model into ``out_dir/<name>``,
    all converted before anything is written, and written all or nothing."""
    from .readers.tflite.task import read_task

    models = read_task(source, options.member)
    if options.member is not None:
        return _convert_spec(models[0][1], source, out_dir, options, progress)
    if options.report_path is not None:
        raise UsageError(f"{source}: --report writes one report; a bundle's models each get OUT/<name>/report.json "
                         "(or pass --member NAME)")
    dry = dataclasses.replace(options, dry_run=True)
    done = {name: _convert_spec(spec, source, None, dry, None) for name, spec in models}
    first = next(iter(done.values()))
    result = Conversion(first.report, first.plans, first.model_source, None, members=done)
    if options.dry_run:
        return result
    if out_dir is None:
        raise UsageError("convert needs an output directory (-o OUTDIR) unless --dry-run")
    from .write.atomic import staged_output
    from .write.output import write_outputs

    with staged_output(Path(out_dir), force=options.force) as staging:
        for name, c in done.items():
            c.files = write_outputs(staging / name, c.plans, c.report, c.model_source, options.weights_format,
                                    c.taps, progress=progress)
            c.out_dir = Path(out_dir) / name
    result.out_dir, result.files = Path(out_dir), [f"{name}/{f}" for name, c in done.items() for f in c.files]
    return result


def hf_route(source: str | Path, options: ConvertOptions) -> str | None:
    """The Hugging Face route ``source`` takes with ``options``: ``"checkpoint"`` (``--hf-config``), ``"repo"``
    (a transformers repository directory, or ``--hf-class``), or None (the other modes)."""
    from . import hf

    if options.hf_config is not None:
        return "checkpoint"
    if options.hf_class is not None or hf.is_repo(source):
        return "repo"
    return None


def verify(source: str | Path, out_dir: str | Path, **options: Any):
    """Run ``source`` in TensorFlow and ``out_dir``'s converted model in PyTorch; compare per layer.

    Needs the ``tf`` extra. Keyword options as ``tf2torch.compare.verify`` (``input_shape``, ``inputs``,
    ``atol``, ``rtol``, ``seed``, ``report_file``, ``plot``, ``force``, ``tf_inputs``, ``tf_outputs``;
    ``hf_config`` for an original TF1 checkpoint converted with it: transformers 4.x's loader is the reference).

    Returns:
        A ``VerifyResult``: ``.ok``, ``.first_diverging``, per-layer ``.rows``, ``.to_json()``.

    Example:
        >>> tf2torch.verify("fixtures/keras3/cnn.keras", "out").ok
        True
    """
    from .compare import verify as _verify

    return _verify(source, out_dir, **options)
