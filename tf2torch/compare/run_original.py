"""``verify model.ckpt OUT --hf-config config.json``: an original TF1 checkpoint (Google's, OpenAI's, mesh-TF's
names) against the repository ``convert`` wrote from it.

No TF model class reads an original checkpoint's names, so the reference is what transformers 4.x itself made
of it: the class its conversion script built (the convention's ``loader_class``, else OUT's class), every
parameter first set to NaN (a parameter the loader leaves alone shows, unless the class computes it itself:
the convention's ``computed``), filled by the family's ``load_tf_weights_in_<model>``, and its weights then
put into OUT's class by key (a bare model drops the prefix, a head class adds it). That model and OUT's,
loaded by ``from_pretrained(OUT)`` with OUT's own config, run on the same seeded inputs; every output tensor
and hidden state is a row, as ``verify REPO OUT`` compares them (``run_hf``).

Needs transformers 4.x and TensorFlow (the loaders read the checkpoint with ``tf.train.load_variable``).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, UnsupportedError, UsageError
from ..hf.original import Convention, pick
from ..hf.original import config as configs
from ..readers.checkpoint import read_checkpoint
from .compare import first_diverging, verdict
from .reference import import_tf
from .result import ORIGINAL, VerifyResult
from .run_hf import BATCH, LENGTH, make_rows, out_class

FEED = ("input_ids", "pixel_values", "decoder_input_ids")  # what the original families' classes take
NEEDS = "transformers 4.x with TensorFlow (pip install 'tf2torch[tf]' 'transformers<5')"


def verify_checkpoint(source: Path, out: Path, hf_config: Path, *, inputs: Any, atol: float, rtol: float,
                      seed: int) -> VerifyResult:
    """Run the 4.x loader's model and OUT's on the same inputs; one row per output tensor and hidden state."""
    pt_name, mode = out_class(out)
    transformers = _import_transformers()
    spec = read_checkpoint(source, verify_crc=False)  # the prefix the loader takes, and the names
    prefix = str(spec.path)[: -len(".index")]
    cls = getattr(transformers, pt_name, None)
    if cls is None:
        raise UnsupportedError(f"{out / 'config.json'}: transformers {transformers.__version__} has no class "
                               f"{pt_name} to run; verify with the transformers that converted it")
    raw = configs.read(hf_config)
    model_type = configs.model_type(raw, hf_config, cls.config_class.model_type, [v.name for v in spec.variables])
    convention = pick(model_type, pt_name)
    assert convention is not None  # model_type() accepts only types a convention serves
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # the loaders' per-variable notices
    try:
        config = configs.build(transformers, cls, convention, raw, hf_config)  # (caches: not compared, make_rows)
        reference = _reference(transformers, cls, convention, config, prefix)
        try:  # as a user loads OUT: its own config.json, so a config convert wrote wrong shows too
            converted, info = cls.from_pretrained(out, output_loading_info=True)
        except Exception as exc:
            raise UsageError(f"{out}: {pt_name}.from_pretrained fails ({type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:200]}); convert again") from None
    finally:
        transformers.logging.set_verbosity(verbosity)
    notes = [f"PyTorch {pt_name}.from_pretrained: {kind.replace('_', ' ')}: {', '.join(map(str, keys))}"
             for kind, keys in info.items() if keys and kind != "error_msgs"]
    feed = _inputs(cls, config, inputs, seed)
    import torch

    with torch.no_grad():
        try:
            runs = [_call(m.eval(), {k: torch.from_numpy(v) for k, v in feed.items()}) for m in (reference, converted)]
        except Exception as exc:  # the class refuses these inputs (a shape, an id): one line, not its traceback
            raise UnsupportedError(f"{pt_name}: running it on {', '.join(f'{k} {list(v.shape)}' for k, v in feed.items())} "
                                   f"failed ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); pass --inputs "
                                   "FILE.npz with inputs it takes") from None
    loader = f"{convention.loader}({convention.loader_class or pt_name})"
    rows = make_rows(runs[0], runs[1], loader, pt_name, atol, rtol)
    first = first_diverging(rows)
    described = [{"name": k, "shape": list(v.shape), "tf_shape": list(v.shape), "layout": "transformers",
                  "dtype": str(v.dtype), "origin": "given" if inputs is not None else f"random (seed {seed})"}
                 for k, v in feed.items()]
    kind = f"{ORIGINAL}, read by transformers {transformers.__version__}'s {loader}"
    return VerifyResult(source=str(source), out_dir=str(out), source_kind=kind, mode=mode, atol=atol, rtol=rtol,
                        inputs=described, rows=rows, ok=verdict(rows), first_diverging=first.name if first else None,
                        notes=notes)


def _import_transformers() -> ModuleType:
    """transformers 4.x (it still has the loaders), with TensorFlow (they import it), or one line."""
    try:
        import_tf()
    except MissingDependencyError:
        raise MissingDependencyError(f"verify with --hf-config runs transformers' load_tf_weights_in_<model>, which "
                                     f"reads the checkpoint with TensorFlow: it cannot be imported; needs {NEEDS}") from None
    try:
        import transformers
    except ImportError as exc:
        raise MissingDependencyError(f"verify with --hf-config needs transformers ({exc}): {NEEDS}") from None
    if int(transformers.__version__.split(".")[0]) >= 5:
        raise MissingDependencyError(f"verify with --hf-config runs transformers' load_tf_weights_in_<model>, which "
                                     f"transformers {transformers.__version__} removed: needs {NEEDS}")
    return transformers


def _reference(transformers: ModuleType, cls: type, convention: Convention, config: Any, prefix: str) -> Any:
    """OUT's class holding the weights transformers' own loader read from the checkpoint."""
    import torch

    full_cls = getattr(transformers, convention.loader_class) if convention.loader_class else cls
    loader = getattr(sys.modules[full_cls.__module__], convention.loader, None)
    if loader is None:
        raise UnsupportedError(f"transformers {transformers.__version__} has no {convention.loader} beside "
                               f"{full_cls.__name__}; verify with transformers 4.57")
    full = full_cls(config)  # on CPU, initialised: the values a class computes itself (RoFormer's sinusoid) stay
    computed = [re.compile(p) for p, _ in convention.computed]
    with torch.no_grad():
        for key, param in full.named_parameters():
            if not any(p.search(key) for p in computed):
                param.fill_(float("nan"))
    args = (full, config, prefix) if "config" in inspect.signature(loader).parameters else (full, prefix)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # some loaders print every variable (ALBERT's): not our output
            loader(*args, **dict(convention.loader_kwargs))
    except Exception as exc:  # a shape the config does not give, a name the class lacks: the loader's own words
        raise UsageError(f"{prefix}: transformers' {convention.loader} cannot read it into {full_cls.__name__} "
                         f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); pass the checkpoint and the "
                         "config OUT was converted from") from None
    with torch.no_grad():  # the loaders assign transposed numpy views: strided weights pick other kernels (ConvBERT's
        for param in full.parameters():  # convs differ by 1e-6); the conversion script's saved model was C-ordered
            param.data = param.data.contiguous()
    state = full.state_dict()
    unset = [k for k, v in state.items() if v.is_floating_point() and bool(torch.isnan(v).any())]
    if unset:
        raise UsageError(f"{prefix}: transformers' {convention.loader} left {len(unset)} parameter(s) of "
                         f"{full_cls.__name__} unset ({', '.join(unset[:3])}): no reference to verify against; is "
                         "this the checkpoint OUT was converted from?")
    if full_cls is cls:
        return full
    model = cls(config)
    base = getattr(cls, "base_model_prefix", "")
    found = {k: next((state[c] for c in (k, f"{base}.{k}", k.partition(".")[2]) if c in state), None)
             for k in model.state_dict()}
    missing = model.load_state_dict({k: v for k, v in found.items() if v is not None}, strict=False).missing_keys
    from ..hf.target import tie_groups

    tied = {k for group in tie_groups(model) for k in group}
    if set(missing) - tied:
        raise UnsupportedError(f"{cls.__name__}: {full_cls.__name__}, the class transformers' {convention.loader} "
                               f"fills, has no {sorted(set(missing) - tied)[:3]}; verify has no reference for them")
    model.tie_weights()
    return model


def _inputs(cls: type, config: Any, given: Any, seed: int) -> dict[str, np.ndarray]:
    """The named inputs: ``given`` (an .npz path or mapping), else seeded ones the class's forward takes."""
    if given is not None:
        data = np.load(given) if isinstance(given, (str, Path)) else given
        if not hasattr(data, "keys"):
            raise UsageError(f"--inputs {given}: a transformers model takes named inputs; pass an .npz "
                             "(np.savez(path, input_ids=...))")
        return {str(k): np.asarray(data[k]) for k in data.keys()}
    takes = inspect.signature(cls.forward).parameters
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name in (n for n in FEED if n in takes):
        if name == "pixel_values":
            size = config.image_size
            out[name] = rng.standard_normal((BATCH, config.num_channels, size, size)).astype(np.float32)
        else:  # the decoder's ids share the vocabulary; CANINE's are code points (no vocabulary)
            out[name] = rng.integers(1, getattr(config, "vocab_size", None) or 100, (BATCH, LENGTH)).astype(np.int64)
    if not out:
        raise UnsupportedError(f"{cls.__name__}: takes none of {', '.join(FEED)}; pass --inputs FILE.npz with the "
                               "model's inputs by name")
    return out


def _call(model: Any, feed: dict[str, Any]) -> Any:
    try:
        return model(**feed, output_hidden_states=True)
    except TypeError:  # a class whose forward takes no such flag: its outputs only
        return model(**feed)
