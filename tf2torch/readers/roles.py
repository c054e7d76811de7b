"""Name-based roles of TF1 checkpoint variables: weights, optimizer state, EMA shadows, bookkeeping.

TF1 names carry their purpose by convention only:

* ``slot_creator`` names an optimizer slot ``<variable>/<optimizer name>``, and its second slot
  ``<variable>/<optimizer name>_1`` (Adam m/v, RMSProp rms/momentum, Ftrl accum/linear, ...);
* google-research BERT's AdamWeightDecayOptimizer: ``<variable>/adam_m``, ``<variable>/adam_v``;
* Adam and AdaMax keep ``beta1_power`` / ``beta2_power`` (``_1``, ``_2``... with several optimizers);
* mesh-TF's Adafactor (T5): ``<variable>_slot_vr``, ``_slot_vc`` (factored second moments), ``_slot_v``,
  and ``_slot_m`` (first moment, with beta1);
* ``ExponentialMovingAverage.apply`` names a shadow ``<variable>/ExponentialMovingAverage`` (its
  zero-debias helpers live below that: ``.../biased``, ``.../local_step``);
* TF1 Keras optimizers live under ``training/<Optimizer>/`` and ``<Optimizer>/iterations``;
* ``global_step``, loss-scale counters and Keras 3 RNG seed state are bookkeeping.
"""

from __future__ import annotations

import re

from ..spec import Role

# Default `name=` of the tf.compat.v1.train optimizers with slots (and contrib / Keras-1 ones seen in
# the wild). The optimizer name is the *last* path component of a slot.
OPTIMIZERS = (
    "Adam", "AdamW", "AdaMax", "LazyAdam", "Nadam", "Adamax", "Momentum", "RMSProp", "Adagrad",
    "AdagradDA", "Adadelta", "Ftrl", "ProximalAdagrad", "LARS", "LAMB", "SGD", "Lion",
)
_OPT = "|".join(OPTIMIZERS)
_SLOT = re.compile(rf"^(?P<var>.+)/(?P<opt>{_OPT})(?:_(?P<n>\d+))?$")
_POWER = re.compile(r"(^|/)beta[12]_power(_\d+)?$")
# google-research BERT / ALBERT / ELECTRA's AdamWeightDecayOptimizer names its slots "<var>/adam_m" and
# "<var>/adam_v" (optimization.py: `name=param_name + "/adam_m"`), not by the optimizer's name.
_ADAM_MV = re.compile(r"^(?P<var>.+)/adam_(?P<slot>[mv])$")
# mesh_tensorflow's Adafactor names its slots after the variable: var.name + "_slot_vr" (optimize.py)
_ADAFACTOR = re.compile(r"^(?P<var>.+)_slot_(?P<slot>vr|vc|v|m)$")
_KERAS_OPT = re.compile(rf"^(training/)?({_OPT}|optimizer)(_\d+)?/")
_EMA = re.compile(r"(^|/)ExponentialMovingAverage(_\d+)?(/|$)")
# Counters and RNG state: Keras 3 layers with randomness (Dropout, RandomFlip...) own a SeedGenerator
# whose variable is "seed_generator_state"; loss scaling keeps "current_loss_scale" / "good_steps".
_BOOKKEEPING = re.compile(
    r"(^|/)(global_step|save_counter|_CHECKPOINTABLE_OBJECT_GRAPH|current_loss_scale|good_steps"
    r"|seed_generator_state)$"
)

# Which slot the `_1` suffix denotes, per optimizer (tensorflow/python/training/*.py `_create_slots`).
_SLOT_NAMES = {
    "Adam": ("m", "v"), "AdaMax": ("m", "v"), "LazyAdam": ("m", "v"), "Nadam": ("m", "v"),
    "RMSProp": ("rms", "momentum"), "Ftrl": ("accum", "linear"), "Adadelta": ("accum", "accum_update"),
    "AdagradDA": ("gradient_accumulator", "gradient_squared_accumulator"),
    "Momentum": ("momentum",), "Adagrad": ("accumulator",), "ProximalAdagrad": ("accumulator",),
}


def classify_tf1(name: str) -> tuple[Role, str]:
    """The role of a TF1 (name-based) checkpoint variable and a short note saying why."""
    if _BOOKKEEPING.search(name):
        return Role.BOOKKEEPING, f"bookkeeping counter {name.rsplit('/', 1)[-1]!r}"
    ema = _EMA.search(name)
    if ema:
        return Role.EMA, f"ExponentialMovingAverage shadow of {name[:ema.start()] or name}"
    if _POWER.search(name):
        return Role.OPTIMIZER, "Adam beta power accumulator (optimizer state)"
    mv = _ADAM_MV.match(name)
    if mv:
        return Role.OPTIMIZER, f"AdamWeightDecay slot {mv['slot']!r} of {mv['var']} (google-research BERT style)"
    factored = _ADAFACTOR.match(name)
    if factored:
        return Role.OPTIMIZER, f"Adafactor slot {factored['slot']!r} of {factored['var']} (mesh-TF style)"
    slot = _SLOT.match(name)
    if slot:
        opt, index = slot["opt"], int(slot["n"] or 0)
        names = _SLOT_NAMES.get(opt, ())
        which = f" {names[index]!r}" if index < len(names) else (f" #{index}" if index else "")
        return Role.OPTIMIZER, f"{opt} slot{which} of {slot['var']}"
    if _KERAS_OPT.match(name):
        return Role.OPTIMIZER, f"optimizer state under {name.split('/', 1)[0]!r} (Keras-style name)"
    return Role.WEIGHT, ""
