"""IntegerLookup as Keras 3's ``IndexLookup`` computes it at inference (tf_keras's is the same table).

The vocabulary comes from the config (``vocabulary=[...]``) or, for an adapted layer, from the
``vocabulary.txt`` Keras 3 saves among the ``.keras`` archive's assets (``readers/keras_assets.py``);
a vocabulary *file path* in the config is never opened. Indices: ``[mask]`` (int output only), then
``num_oov_indices`` OOV slots, then the tokens in vocabulary order. An unknown token takes the one OOV
slot, or with several ``oov_start + token mod n`` (floormod); the mask token maps to 0 for "int" and to
no column in the encodings. ``invert=True`` maps indices back to tokens (others to ``oov_token``).

Keras 3's eager call returns the encodings as int64, but declares float32 (the KerasTensor the rest of
the model was built on, and what tf_keras returns): the converted model returns float32, same values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..codegen import nodes as n
from ..map import layouts
from .base import Converted, Ctx, Module, Op, Param, TensorInfo
from .common import cfg_bool, cfg_int, cfg_str
from .preprocessing import ENCODER, ENCODINGS, encode, not_sparse, policy
from .registry import converter

INT64 = np.iinfo(np.int64)
ASSET = "vocabulary.txt"


def _token(ctx: Ctx, key: str) -> int | None:
    value = ctx.config.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or not INT64.min <= value <= INT64.max):
        raise ctx.unsupported(f"config {key!r} should be an int64 token or null, found {value!r}")
    return value


def _saved_vocabulary(ctx: Ctx) -> tuple[list[Any], str]:
    """The vocabulary as Keras reloads it: the config's list, else the archive's vocabulary.txt."""
    value = ctx.config.get("vocabulary")
    if isinstance(value, list):
        return value, ""
    if value is not None and not isinstance(value, str):
        raise ctx.unsupported(f"config 'vocabulary' should be a list of tokens, found {type(value).__name__}")
    data = ctx.layer.assets.get(ASSET)
    named = f"the config names a vocabulary file ({value!r}), which tf2torch never opens" \
        if isinstance(value, str) else "no vocabulary in the config"
    if data is None:
        raise ctx.unsupported(f"{named}, and no {ASSET} is among the .keras file's assets (an .h5 file keeps "
                              "no adapted vocabulary)", "save the model as .keras, or with vocabulary=[...]")
    try:
        lines = data.decode("utf-8").splitlines()
        while lines and lines[-1] == "":  # as Keras's load_assets: trailing blank lines dropped
            lines.pop()
        tokens: list[Any] = [int(line) for line in lines]
    except ValueError as exc:
        raise ctx.unsupported(f"its {ASSET} asset is not one integer a line ({str(exc)[:80]})") from None
    # a file-path vocabulary is saved there too, and Keras (safe_mode=False) ends up with that copy
    return tokens, f"{named}: its vocabulary is the archive's assets/.../{ASSET} ({len(tokens)} lines)"


def _tokens(ctx: Ctx, vocab: list[Any], mask: int | None, oov: int | None, oov_start: int, num_oov: int,
            invert: bool) -> list[int]:
    """``set_vocabulary``: leading special tokens dropped when present, then Keras's own checks."""
    if any(isinstance(t, bool) or not isinstance(t, int) or not INT64.min <= t <= INT64.max for t in vocab):
        raise ctx.unsupported("the vocabulary should hold int64 tokens")
    start = oov_start + num_oov
    special = [mask] * oov_start + [oov] * num_oov
    tokens = vocab[start:] if vocab[:start] == special else vocab
    if not tokens:
        raise ctx.unsupported("an empty vocabulary (never adapted): every token would be out of vocabulary")
    if len(set(tokens)) != len(tokens):
        raise ctx.unsupported("the vocabulary repeats a token (Keras refuses it)")
    if (mask is not None and mask in tokens) or (invert and oov is not None and oov in tokens):
        raise ctx.unsupported("the mask or OOV token is inside the vocabulary (Keras refuses it)")
    return tokens


@converter("IntegerLookup", wants="keras")
def integer_lookup(ctx: Ctx) -> Converted:
    mode = cfg_str(ctx, "output_mode", "int", ("int", "binary", *ENCODINGS))
    mode = "multi_hot" if mode == "binary" else mode
    not_sparse(ctx)
    if cfg_str(ctx, "vocabulary_dtype", "int64") != "int64":
        raise ctx.unsupported(f"vocabulary_dtype {ctx.config.get('vocabulary_dtype')!r} (int64 is converted)")
    invert = cfg_bool(ctx, "invert", False)
    num_oov = cfg_int(ctx, "num_oov_indices", 1)
    mask, oov = _token(ctx, "mask_token"), _token(ctx, "oov_token")
    if num_oov < 0 or invert and mode != "int":
        raise ctx.unsupported(f"num_oov_indices={num_oov}, invert={invert}, output_mode={mode!r}")
    if num_oov > 1 and not invert and ctx.config.get("oov_method", "floormod") != "floormod":
        raise ctx.unsupported(f"oov_method {ctx.config.get('oov_method')!r}: only floormod OOV slots are converted")
    if invert and oov is None:
        raise ctx.unsupported("invert=True with oov_token=None (TF's table has no default value)")
    if ctx.keras_version == 2:  # tf_keras returns ids in the layer's dtype, encodings in its float dtype
        expected = "int64" if mode == "int" else "float32"
        if policy(ctx) not in (None, expected):
            raise ctx.unsupported(f"dtype {policy(ctx)!r} (tf_keras: {expected} is converted for {mode!r})")
    oov_start = 1 if mask is not None and mode == "int" else 0
    start = oov_start + num_oov
    vocab, note = _saved_vocabulary(ctx)
    tokens = _tokens(ctx, vocab, mask, oov, oov_start, num_oov, invert)
    size = start + len(tokens)
    max_tokens = ctx.config.get("max_tokens")
    if max_tokens is not None and size > cfg_int(ctx, "max_tokens"):
        raise ctx.unsupported(f"{size} indices for max_tokens={max_tokens} (Keras refuses it)")
    frozen = ctx.config.get("vocabulary_size")
    if mode != "int" and frozen is not None and frozen != size:  # Keras's reload checks the same
        raise ctx.unsupported(f"vocabulary_size {frozen!r} in the config, but the vocabulary gives {size}")
    indices = np.arange(start, size, dtype=np.int64)
    words = np.asarray(tokens, dtype=np.int64)
    if invert:  # index -> token; the mask index 0 -> mask_token
        keys, values, default, masked = indices, words, oov, None if mask is None else (0, mask)
    else:
        order = np.argsort(words, kind="stable")
        keys, values = words[order], indices[order]
        default = oov_start if num_oov == 1 else -1  # -1: no slot (n=0: Keras asserts), or hashed (n>1)
        masked = None if mask is None else (mask, 0 if mode == "int" else int(INT64.max))  # max: no column
    kwargs: tuple[tuple[str, Any], ...] = (("mask", masked),) if masked is not None else ()
    if num_oov > 1 and not invert:
        kwargs += (("num_oov", num_oov), ("oov_start", oov_start))
    lookup = Op(n.call(n.M, n.X), Module("KerasIntegerLookup", (len(keys), int(default)), kwargs))
    params = (Param("", "keys", layouts.IDENTITY, const=keys), Param("", "values", layouts.IDENTITY, const=values))
    notes = (note,) if note else ()
    if mode == "int":
        return Converted((lookup,), (TensorInfo(ctx.x.shape, "keras"),), params, notes, ("KerasIntegerLookup",))
    depth = cfg_int(ctx, "max_tokens") if cfg_bool(ctx, "pad_to_max_tokens", False) else size
    op, out = encode(ctx, mode, depth, ctx.x.shape, sample_axis_ok=False)
    return Converted((lookup, op), (out,), params, notes, ("KerasIntegerLookup", ENCODER))
