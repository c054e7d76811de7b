"""Name vocabulary: TF variable paths and PyTorch state_dict keys in one comparable form.

TF names are scopes joined by "/" (``block2.layer.0/shortcut_conv/DW``); PyTorch keys are module paths
joined by "." (``block2.layer.0.convShortcut.weight``). Both are reduced to a *canonical* form: a tuple of
path components, each a sorted tuple of lower-case word tokens, plus the PyTorch leaf name the TF leaf
means. ``shortcut_conv`` and ``convShortcut`` both become ``("conv", "shortcut")``.
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
}

# Scopes that only wrap a layer's variables and have no PyTorch module of their own
# (tf.contrib / slim batch_norm puts gamma/beta under "<layer>/BatchNorm/").
WRAPPER_SCOPES = {"batchnorm"}

_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SUFFIX = re.compile(r":\d+$")  # Keras 2 / TF tensor names end in ":0"

Component = tuple[str, ...]


@dataclass(frozen=True)
class Canonical:
    path: tuple[Component, ...]  # module path, one sorted token tuple per component
    leaf: str  # PyTorch-side parameter name ("weight", "bias", "running_mean", ...)

    def __str__(self) -> str:
        return ".".join("_".join(c) for c in self.path) + f":{self.leaf}"


def tokens(component: str) -> Component:
    """``convShortcut`` / ``shortcut_conv`` / ``Shortcut-Conv`` -> ("conv", "shortcut")."""
    return tuple(sorted(t.lower() for t in _TOKEN.findall(component)))


def split_tf(name: str) -> list[str]:
    """Path components of a TF name: scopes split on "/", and on "." inside a scope (Torch-like scopes)."""
    name = _SUFFIX.sub("", name)
    return [part for scope in name.split("/") for part in scope.split(".") if part]


def leaf_name(tf_leaf: str) -> str | None:
    """The PyTorch parameter name a TF leaf variable name means, or None when the vocabulary has none."""
    return LEAF_VOCABULARY.get(tf_leaf.lower())


def canonical_tf(name: str) -> Canonical | None:
    """Canonical form of a TF variable name; None when its leaf is not in the vocabulary."""
    parts = split_tf(name)
    if not parts:
        return None
    leaf = leaf_name(parts[-1])
    if leaf is None:
        return None
    scopes = [p for p in parts[:-1] if tokens(p) and "".join(tokens(p)) not in WRAPPER_SCOPES]
    # A scope named after the parameter (`conv1.weight/DW`): the scope already says what the leaf says.
    if scopes and tokens(scopes[-1]) == (leaf,):
        scopes.pop()
    return Canonical(tuple(tokens(p) for p in scopes), leaf)


def canonical_torch(key: str) -> Canonical:
    parts = key.split(".")
    return Canonical(tuple(tokens(p) for p in parts[:-1]), parts[-1])


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
