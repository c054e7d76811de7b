"""``verify REPO OUT``: a transformers repository with TF weights, run by transformers 4.x's TF class, against
the repository ``convert`` wrote, run by its PyTorch class (``from_pretrained(OUT)``).

Both classes are transformers' own, so outputs and hidden states carry the same names on both sides: every
tensor of the TF model's output (``logits``, ``last_hidden_state``, ``pooler_output``...) is a final-output
row, every entry of ``hidden_states`` / ``encoder_hidden_states`` / ``decoder_hidden_states`` (asked for
with ``output_hidden_states=True``; entry 0 is the embeddings, entry i the i-th block) a layer row, in
network order. Inputs are seeded and built from the TF class's ``input_signature`` and the config: token
ids in the vocabulary, ``pixel_values`` of the config's image size, ``decoder_input_ids`` for seq2seq.

transformers 5 has no TF classes: this runs where the ``tf`` extra and transformers 4.x are installed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..errors import FormatError, MissingDependencyError, UnsupportedError, UsageError
from .compare import compare_row, first_diverging, verdict
from .reference import full_float32, import_tf
from .result import Row, VerifyResult

HF_MODE = "hugging-face"  # report.json's mode of a transformers repository (then the class: "hugging-face BertModel")
# The inputs fed when the TF class takes them; masks, token types and positions keep their defaults.
FEED = ("input_ids", "pixel_values", "input_values", "input_features", "decoder_input_ids")
BATCH, LENGTH, CHOICES = 2, 7, 2
# Output entries that are not numbers to compare (caches: tuples of key/value tensors, another type in PyTorch)
NOT_COMPARED = frozenset({"past_key_values", "loss"})
NEEDS = "transformers 4.x with TensorFlow (pip install 'tf2torch[tf]' 'transformers<5')"


def out_class(out: Path) -> tuple[str, str]:
    """(the PyTorch class, report.json's mode) of a repository ``convert`` wrote, or UsageError."""
    report, config = out / "report.json", out / "config.json"
    if not out.is_dir() or not report.is_file() or not config.is_file():
        raise UsageError(f"{out}: not a transformers repository `tf2torch convert REPO -o OUT` wrote (config.json "
                         "and report.json); pass that OUT")
    try:
        mode = json.loads(report.read_text(encoding="utf-8")).get("mode", "")
        architectures = json.loads(config.read_text(encoding="utf-8")).get("architectures") or [""]
    except (UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        raise FormatError(f"{out}: report.json or config.json is not a JSON object ({exc}); convert again") from None
    if not str(mode).startswith(HF_MODE) or not isinstance(architectures[0], str) or not architectures[0]:
        raise UsageError(f"{out}: report.json says mode {mode!r}, not a transformers repository; verify REPO "
                         "against the OUT of `tf2torch convert REPO -o OUT`")
    return architectures[0], str(mode)


def import_tf_transformers() -> ModuleType:
    """transformers with its TF classes, or one line naming what is missing."""
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # transformers' TF classes are tf_keras (Keras 2) models
    try:
        import_tf()
    except MissingDependencyError:
        raise MissingDependencyError(f"verify REPO OUT runs the TF model: TensorFlow cannot be imported; needs "
                                     f"{NEEDS}") from None
    loaded = "transformers" in sys.modules
    # Read once, at transformers' import: AUTO for both (USE_TF=1 alone would turn its PyTorch classes off).
    saved = {name: os.environ.get(name) for name in ("USE_TF", "USE_TORCH")}
    os.environ.update(USE_TF="AUTO", USE_TORCH="AUTO")
    try:
        import transformers
    except ImportError as exc:
        raise MissingDependencyError(f"verify REPO OUT needs transformers ({exc}): {NEEDS}") from None
    finally:
        for name, value in saved.items():
            os.environ.pop(name) if value is None else os.environ.update({name: value})
    major = int(transformers.__version__.split(".")[0])
    if major >= 5:
        raise MissingDependencyError(f"verify REPO OUT runs transformers' TF classes, which transformers "
                                     f"{transformers.__version__} removed: needs {NEEDS}")
    if not transformers.is_tf_available():
        why = "was imported with USE_TF=0 earlier in this process" if loaded else "finds no TensorFlow"
        raise MissingDependencyError(f"verify REPO OUT: transformers {transformers.__version__} {why}, so its TF "
                                     f"classes are off; needs {NEEDS}")
    return transformers


def verify_repo(source: Path, out: Path, *, inputs: Any, atol: float, rtol: float, seed: int) -> VerifyResult:
    """Run both models on the same inputs; one row per output tensor and per hidden state."""
    pt_name, mode = out_class(out)
    transformers = import_tf_transformers()
    tf = import_tf()
    tf_cls = getattr(transformers, f"TF{pt_name}", None)
    pt_cls = getattr(transformers, pt_name, None)
    if tf_cls is None or pt_cls is None:
        missing = f"TF{pt_name}" if tf_cls is None else pt_name
        raise UnsupportedError(f"{out / 'config.json'}: transformers {transformers.__version__} has no class "
                               f"{missing} to run; verify needs both the TF and the PyTorch class")
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # "TF and JAX classes are deprecated", weight-use notices
    try:
        tf_model, tf_info = tf_cls.from_pretrained(source, config=_config(transformers, source),
                                                   output_loading_info=True)
        pt_model, pt_info = pt_cls.from_pretrained(out, config=_config(transformers, out), output_loading_info=True)
    finally:
        transformers.logging.set_verbosity(verbosity)
    # TF's "unexpected" are h5 layers its model has no place for (weightless ones too: a Dropout's name); they
    # do not change what it computes. What either side left at its initial values does.
    tf_info = {k: v for k, v in tf_info.items() if k != "unexpected_keys"}
    notes = _loading_notes(tf_info, "TensorFlow", tf_cls.__name__) + _loading_notes(pt_info, "PyTorch", pt_name)
    feed = _inputs(tf_model, inputs, seed)
    with full_float32(tf):
        tf_out = _call(lambda **kw: tf_model(**{k: tf.constant(v) for k, v in feed.items()}, training=False, **kw))
    import torch

    with torch.no_grad():
        pt_model.eval()
        pt_out = _call(lambda **kw: pt_model(**{k: torch.from_numpy(_torch_dtype(v)) for k, v in feed.items()}, **kw))
    rows = make_rows(tf_out, pt_out, tf_cls.__name__, pt_name, atol, rtol)
    first = first_diverging(rows)
    described = [{"name": k, "shape": list(v.shape), "tf_shape": list(v.shape), "layout": "transformers",
                  "dtype": str(v.dtype), "origin": "given" if inputs is not None else f"random (seed {seed})"}
                 for k, v in feed.items()]
    return VerifyResult(source=str(source), out_dir=str(out), source_kind=f"transformers {tf_cls.__name__}",
                        mode=mode, atol=atol, rtol=rtol, inputs=described, rows=rows, ok=verdict(rows),
                        first_diverging=first.name if first else None, notes=notes)


def _config(transformers: ModuleType, where: Path) -> Any:
    config = transformers.AutoConfig.from_pretrained(where)
    if hasattr(config, "use_cache"):
        config.use_cache = False  # a cache is no output to compare (and differs in type between frameworks)
    return config


def _loading_notes(info: dict[str, Any], side: str, name: str) -> list[str]:
    """What from_pretrained left at its initial values or did not use: the comparison is then of random
    weights there (the TF side: --hf-class named another head than the repository's)."""
    return [f"{side} {name}.from_pretrained: {kind.replace('_', ' ')}: {', '.join(map(str, keys))}"
            for kind, keys in info.items() if keys and kind != "error_msgs"]


def _inputs(tf_model: Any, given: Any, seed: int) -> dict[str, np.ndarray]:
    """The named inputs: ``given`` (an .npz path or name -> array mapping), else seeded from the signature."""
    if given is not None:
        data = np.load(given) if isinstance(given, (str, Path)) else given
        if not hasattr(data, "keys"):
            raise UsageError(f"--inputs {given}: a transformers model takes named inputs; pass an .npz "
                             "(np.savez(path, input_ids=...))")
        return {str(k): np.asarray(data[k]) for k in data.keys()}
    signature = tf_model.input_signature
    names = [n for n in FEED if n in signature]
    if not names:
        raise UnsupportedError(f"{type(tf_model).__name__}: takes {', '.join(signature)}, none of which verify "
                               f"builds ({', '.join(FEED)}); pass --inputs FILE.npz with the model's inputs by name")
    config, rng = tf_model.config, np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name in names:
        spec = signature[name]
        dims = list(spec.shape)
        shape = [BATCH if i == 0 else LENGTH if i == len(dims) - 1 else CHOICES if d is None else d
                 for i, d in enumerate(dims)]
        shape = [d if known is None else known for d, known in zip(shape, dims)]
        if spec.dtype.is_integer:
            high = getattr(config, "vocab_size", None) or 100  # the decoder's ids share the vocabulary
            out[name] = rng.integers(1, high, shape).astype(spec.dtype.as_numpy_dtype)
        else:
            out[name] = rng.standard_normal(shape).astype(np.float32)
    return out


def _torch_dtype(value: np.ndarray) -> np.ndarray:
    return value.astype(np.int64) if np.issubdtype(value.dtype, np.integer) else value


def _call(run: Any) -> Any:
    """The model's output with every hidden state (a class whose call takes no such flag: its outputs only)."""
    try:
        return run(output_hidden_states=True)
    except TypeError:
        return run()


def make_rows(tf_out: Any, pt_out: Any, tf_name: str, pt_name: str, atol: float, rtol: float) -> list[Row]:
    """Hidden states first (encoder, then decoder: network order), then the outputs, in the TF output's order
    (``tf_out``: the reference's output, a TF model's or, for an original checkpoint, transformers' loader's)."""
    layers: list[Row] = []
    outputs: list[Row] = []
    keys = sorted(tf_out.keys(), key=lambda k: 0 if k.startswith("encoder_hidden") else 1)
    for key in keys:
        if key in NOT_COMPARED:
            continue
        expected, actual = tf_out[key], getattr(pt_out, key, None)
        if isinstance(expected, (tuple, list)):
            kind = "layer" if "hidden_states" in key else "output"
            for i, tensor in enumerate(expected):
                other = actual[i] if isinstance(actual, (tuple, list)) and i < len(actual) else None
                (layers if kind == "layer" else outputs).append(
                    _row(f"{key}[{i}]", kind, tensor, other, tf_name, pt_name, atol, rtol))
        else:
            outputs.append(_row(key, "output", expected, actual, tf_name, pt_name, atol, rtol))
    return layers + outputs


def _row(name: str, kind: str, expected: Any, actual: Any, tf_name: str, pt_name: str, atol: float,
         rtol: float) -> Row:
    tf_value = None if expected is None else np.asarray(expected.numpy() if hasattr(expected, "numpy") else expected)
    pt_value = None if actual is None else actual.detach().numpy()
    return compare_row(name, kind, f"{tf_name}.{name}", f"{pt_name}.{name}", pt_value, tf_value, atol, rtol)
