"""Name vocabulary: TF variable paths and PyTorch state_dict keys in one comparable form.

TF names are scopes joined by "/" (``block2.layer.0/shortcut_conv/DW``); PyTorch keys are module paths
joined by "." (``block2.layer.0.convShortcut.weight``). Both are reduced to a *canonical* form: a tuple of
path components, each a tuple of lower-case word tokens (a trailing index its own component), plus the
PyTorch leaf name the TF leaf means. ``shortcut_conv`` and ``convShortcut`` meet in the loose form
(``Canonical.loose``: word order ignored), ``layer_._0`` and ``layer.0`` in both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import MappingError

# TF leaf name -> PyTorch parameter name. Keys are lower-case.
LEAF_VOCABULARY: dict[str, str] = {
    "kernel": "weight",
    "dw": "weight",  # the WideResNet / tensorflow/models resnet convention
    "w": "weight",
    "weights": "weight",
    "weight": "weight",
    "depthwise_kernel": "weight",
    "depthwise_weights": "weight",
    "embeddings": "weight",
    "gamma": "weight",
    "scale": "weight",
    "bias": "bias",
    "biases": "bias",
    "b": "bias",
    "beta": "bias",
    "offset": "bias",
    "moving_mean": "running_mean",
    "mean": "running_mean",
    "moving_variance": "running_var",
    "variance": "running_var",
    "running_mean": "running_mean",  # already PyTorch's names (e.g. a Keras weight named by its converter)
    "running_var": "running_var",
    "alpha": "weight",  # PReLU
    # google-research BERT's output layers (run_pretraining.py, run_classifier.py): a bare variable
    # pair, not a Dense; "output_weights" is stored (out, in), see OUT_IN_KERNELS.
    "output_weights": "weight",
    "output_bias": "bias",
}

# A Keras SeparableConv's two kernels, which a PyTorch port splits into two convs named after them
# (transformers' ConvBERT: ``key_conv_attn_layer.depthwise.weight`` and ``.pointwise.weight``)
SEPARABLE = {"depthwise_kernel": "depthwise", "pointwise_kernel": "pointwise"}

# Kernels stored (out, in) and read with ``tf.matmul(x, w, transpose_b=True)``: already torch's Linear
# layout, so they are not transposed.
OUT_IN_KERNELS = frozenset({"output_weights"})

# Scopes that only wrap a layer's variables and have no PyTorch module of their own
# (tf.contrib / slim batch_norm puts gamma/beta under "<layer>/BatchNorm/").
WRAPPER_SCOPES = {"batchnorm"}

_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SUFFIX = re.compile(r":\d+$")  # Keras 2 / TF tensor names end in ":0"

Component = tuple[str, ...]

# TF leaves that are a weight-normalised layer's magnitude / direction: torch's old weight_norm names
# them weight_g / weight_v, its parametrizations API "parametrizations.weight.original0" / "original1".
WEIGHT_NORM = {"weight_g": "original0", "weight_v": "original1"}


@dataclass(frozen=True)
class Canonical:
    path: tuple[Component, ...]  # module path: ordered lower-case tokens per component
    leaf: str  # PyTorch-side parameter name ("weight", "bias", "running_mean", "cls_token", ...)

    def loose(self) -> Canonical:
        """Word order within a component ignored: ``shortcut_conv`` meets ``convShortcut``."""
        return Canonical(tuple(tuple(sorted(c)) for c in self.path), self.leaf)

    def __str__(self) -> str:
        return ".".join("_".join(c) for c in self.path) + f":{self.leaf}"


def tokens(component: str) -> Component:
    """``convShortcut`` / ``shortcut_conv`` / ``Shortcut-Conv`` -> ("conv", "shortcut") (sorted)."""
    return tuple(sorted(t.lower() for t in _TOKEN.findall(component)))


def components(part: str) -> list[Component]:
    """One name component as canonical components: ordered word tokens, a trailing index split off so
    that TF's list entries meet PyTorch's (``layer_0``, ``layer_._0``, ``h_0``, ``layer_with_weights-3``,
    ``conv1`` -> ("layer",), ("0",) ...; torch's ``layer.0`` already is two components). Order is kept:
    ``Conv2d_0b_1x3`` and ``Conv2d_0b_3x1`` stay different."""
    found = [t.lower() for t in _TOKEN.findall(part)]
    if len(found) > 1 and found[-1].isdigit():
        return [tuple(found[:-1]), (found[-1],)]
    return [tuple(found)] if found else []


def _path(parts: list[str]) -> tuple[Component, ...]:
    return tuple(c for p in parts for c in components(p))


def split_tf(name: str) -> list[str]:
    """Path components of a TF name: scopes split on "/", and on "." inside a scope (Torch-like scopes)."""
    name = _SUFFIX.sub("", name)
    return [part for scope in name.split("/") for part in scope.split(".") if part]


def leaf_name(tf_leaf: str) -> str | None:
    """The PyTorch parameter name a TF leaf variable name means, or None when the vocabulary has none."""
    return LEAF_VOCABULARY.get(tf_leaf.lower())


def canonical_tf(name: str) -> list[Canonical]:
    """The canonical forms a TF variable name can meet a state_dict key in, most literal first.

    A vocabulary leaf (``kernel`` -> ``weight``) gives one form. A weight-norm leaf gives torch's two
    spellings. Any other leaf is taken as the parameter's own name (``cls_token``, ``position_embeddings``,
    ``relative_position_bias_table``, ``masked_spec_embed``) or as a module holding a ``weight`` (Google
    BERT's ``bert/embeddings/word_embeddings`` is ``embeddings.word_embeddings.weight``).
    """
    parts = split_tf(name)
    if not parts:
        return []
    scopes = [p for p in parts[:-1] if tokens(p) and "".join(tokens(p)) not in WRAPPER_SCOPES]
    raw = parts[-1].lower()
    leaf = leaf_name(raw)
    split = [Canonical((*_path(scopes), (SEPARABLE[raw],)), "weight")] if raw in SEPARABLE else []
    if raw == "pointwise_kernel":
        return split
    if leaf is not None:
        path = _path(scopes)
        # A scope named after the parameter (`conv1.weight/DW`): the scope already says what the leaf says.
        if path and path[-1] == (leaf,):
            path = path[:-1]
        return [Canonical(path, leaf), *split]
    path = _path(scopes)
    if raw in WEIGHT_NORM:
        return [Canonical(path, raw), Canonical((*path, ("parametrizations",), ("weight",)), WEIGHT_NORM[raw])]
    return [Canonical(path, raw), Canonical((*path, *_path([parts[-1]])), "weight")]


def canonical_torch(key: str) -> Canonical:
    parts = key.split(".")
    return Canonical(_path(parts[:-1]), parts[-1].lower())


def bare_key(name: str, keep_names: bool = False) -> str:
    """A state_dict key for a checkpoint variable when there is no target model.

    Scopes become dotted module paths, wrapper scopes are dropped, and the leaf is renamed by the
    vocabulary (``bert/encoder/layer_0/attention/self/query/kernel`` -> ``bert.encoder.layer_0.
    attention.self.query.weight``). With ``keep_names`` only "/" becomes ".".
    """
    parts = split_tf(name)
    if not parts:  # "", "/", "..": legal TF keys that hold no component to build a module path from
        raise MappingError(f"variable {name!r}: its name has no component to make a state_dict key of; "
                           "give it one with a rules file ([rename]) or skip it")
    if keep_names:
        return ".".join(parts)
    leaf = leaf_name(parts[-1])
    scopes = [p for p in parts[:-1] if "".join(tokens(p)) not in WRAPPER_SCOPES]
    if leaf is None:
        return ".".join([*scopes, parts[-1]])
    if scopes and tokens(scopes[-1]) == (leaf,):
        scopes.pop()
    return ".".join([*scopes, leaf])
