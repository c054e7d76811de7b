"""Original TF1 checkpoints (google-research BERT, ALBERT, ELECTRA, OpenAI GPT-2, mesh-TF T5, ...) onto the
transformers classes: each family's naming convention as data (``Convention``), one module per family,
found by walking this package (adding a family is adding a module that defines ``CONVENTIONS``).

The facts come from transformers 4.57's ``load_tf_weights_in_<model>`` loaders (removed in transformers 5):
which original scope is which PyTorch module, which kernels are stored in another layout, what the loaders
skipped. Here they are regex rewrites from an original name to the key of the family's *full* model (the
pretraining class, ``bert.encoder.layer.0...``, ``cls.predictions...``); ``apply`` adapts them to the
class being built (a bare model has no ``bert.`` prefix and no heads), and the zero-rules matcher then
maps by those names under the usual contract.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

Pairs = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Combine:
    """Several original variables that transformers holds as one tensor (ImageGPT's ``q_proj``, ``k_proj``,
    ``v_proj`` in one ``c_attn``; ``wte`` and ``sos`` in one ``wte``): each part through a layout of the one
    table, then concatenated along ``axis`` in the order given, read as one variable named ``into`` (an
    original-style name, which the convention's renames then take to its key like any other)."""

    into: str  # a template over the parts' regex groups: "model/h\1/attn/c_attn"
    parts: tuple[tuple[str, str], ...]  # (regex on the original name, layout kind), in concatenation order
    axis: int


@dataclass(frozen=True)
class Convention:
    """One family's original checkpoint names and layouts."""

    name: str  # for messages and the report: "google-research BERT"
    model_types: tuple[str, ...]  # the transformers model_type(s) it serves
    bare: str  # the default class: the family's bare model
    detect: str  # regex a variable name of this family's checkpoints matches (config without model_type)
    # (regex, replacement) applied in order: original name -> full model's key, "/" for "."; a replacement
    # may be a function of the match where the index is computed (slim MobileNet's Conv2d_<i> -> layer.<2i-2>)
    renames: tuple[tuple[str, str | Callable[[re.Match[str]], str]], ...]
    heads: Pairs = ()  # (full-model key prefix, what it is): skipped by rule when the class has none of it
    skips: Pairs = ()  # (regex on the original name, why): never part of the class (another model's weights)
    layouts: Pairs = ()  # (regex on the target key, layout kind): kept in a layout the module type does not say
    config_keys: Pairs = ()  # (the release's config key, transformers' key)
    classes: tuple[str, ...] = ()  # the classes this variant is for (ELECTRA's generator); () = any class
    unless: str = ""  # regex of a name that rules ``detect`` out (MobileBERT's names contain BERT's)
    # (regex on the class's key, why): a parameter the class computes in its own initialisation, never
    # stored by the release (RoFormer's sinusoid table): filled by the class's ``_init_weights``
    computed: Pairs = ()
    # regex of the original names whose ExponentialMovingAverage shadow is the weight when the checkpoint
    # holds one (transformers 4.57's MobileNetV2 loader took the averaged weights; its V1 loader did not)
    ema: str = ""
    # regex of the original names stacked over layers along their first axis (XLNet's r_r_bias
    # [n_layer, n_head, d_head]): read as one variable per layer, ``<name>/<i>``, each renamed like any other
    splits: str = ""
    # renames that depend on the model's config, applied before ``renames`` (Funnel's flat layer_<k> onto
    # encoder.blocks.<b>.<j> by the config's block_sizes, as the 4.57 loader walked them)
    indexed: Callable[[Any], tuple[tuple[str, str], ...]] | None = None
    combines: tuple[Combine, ...] = ()  # several original variables into one key (``combine``)
    # transformers 4.57's loader of these names, the class its conversion script filled with it, and the
    # loader's keyword arguments: ``verify``'s reference (the checkpoint's weights as transformers read them)
    loader: str = ""
    loader_class: str = ""  # "" = the converted class itself
    loader_kwargs: tuple[tuple[str, Any], ...] = ()

    def key_of(self, name: str, first: tuple[tuple[str, str], ...] = ()) -> str:
        """The full model's state_dict key an original variable name stands for (``first``: ``indexed``'s
        renames for the model's config)."""
        for pattern, replacement in (*first, *self.renames):
            name = re.sub(pattern, replacement, name)
        return name.replace("/", ".")

    def skip_reason(self, name: str) -> str | None:
        return next((why for pattern, why in self.skips if re.search(pattern, name)), None)


@cache
def conventions() -> tuple[Convention, ...]:
    """Every family module's ``CONVENTIONS``, in module-name order (variants in their module's order)."""
    found: list[Convention] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in ("apply", "combine", "computed", "convert", "config", "user"):
            continue
        found.extend(importlib.import_module(f"{__name__}.{info.name}").CONVENTIONS)
    return tuple(found)


def model_types() -> list[str]:
    return sorted({t for c in conventions() for t in c.model_types})


def pick(model_type: str, class_name: str) -> Convention | None:
    """The convention for ``model_type`` whose variant serves ``class_name`` (a variant naming its
    classes wins over one for any class)."""
    fitting = [c for c in conventions() if model_type in c.model_types]
    return next((c for c in fitting if class_name in c.classes), next((c for c in fitting if not c.classes), None))


def detect(names: list[str]) -> list[Convention]:
    """The conventions (one per family) whose signature names are among ``names``."""
    out: list[Convention] = []
    for c in conventions():
        if c.classes or any(c.model_types[0] in o.model_types for o in out):
            continue
        if any(re.search(c.detect, n) for n in names) and not (c.unless and any(re.search(c.unless, n) for n in names)):
            out.append(c)
    return out
