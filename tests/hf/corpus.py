"""Build the corpus's TF repositories: a family's tiny config, the TF class, seeded random weights
(``randomise_tf``), TensorFlow's outputs as the truth, ``save_pretrained`` as on the Hub.

Each case lands in its own folder: ``repo/`` (the TF repository), ``inputs.npz`` and ``expected.npz``
(every tensor field of TF's output, by name), read by ``load_in_v5.py`` in transformers 5's venv.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import numpy as np

from tests.hf.families import FAMILIES, TF_CLASSES, Family

# Inputs that are not token ids below the vocabulary: their own ranges
MASKS = ("attention_mask", "decoder_attention_mask", "image_attention_mask")
# Output fields that are not the model's numbers: caches (a tuple in TF, a Cache object in transformers 5)
# Heads that are one tower of a two-tower config, and that tower's sub-config
TOWERS = {"text-tower": "text_config", "text-tower-lm": "text_config", "vision-tower": "vision_config"}
SKIPPED_OUTPUTS = ("past_key_values", "mems", "hidden_states", "attentions",
                   "loss")  # ViTMAE's pretraining loss: (1,) in TF, a 0-d tensor in PyTorch


def make_config(transformers: Any, family: Family, head: str) -> Any:
    cls = getattr(transformers, family.config)
    if family.maker:
        parts = {name: getattr(transformers, config)(**kwargs) for name, (config, kwargs) in family.parts.items()}
        config = getattr(cls, family.maker)(*parts.values(), **family.kwargs)
    else:
        config = cls(**family.kwargs)
    if head in TOWERS:  # a CLIP-style tower alone takes its own part of the config
        return getattr(config, TOWERS[head])
    return config


def make_inputs(family: Family, tf_class: str, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    head = TF_CLASSES[tf_class][1]
    for name, shape in family.inputs.items():
        if name == "decoder_input_ids" and head == "sequence-classification":
            continue  # the decoder reads the shifted input_ids: its EOS positions are the input's
        if tf_class.endswith("ForMultipleChoice") and name in ("input_ids", "bbox", "global_attention_mask"):
            shape = (shape[0], 2, *shape[1:])  # (batch, choices, ...)
        if name == "bbox":  # boxes (x0, y0, x1, y1): x0 <= x1, y0 <= y1, inside the 2-D position table
            x, y = (np.sort(rng.integers(0, 60, (*shape[:-1], 2)), axis=-1) for _ in range(2))
            out[name] = np.stack([x[..., 0], y[..., 0], x[..., 1], y[..., 1]], axis=-1).astype(np.int64)
        elif name in MASKS:
            out[name] = np.ones(shape, np.int64)
        elif name == "token_type_ids" and len(shape) == 3:  # TAPAS: 3 question tokens, then a 2x2 table's cells
            out[name] = np.zeros(shape, np.int64)
            cells = shape[1] - 3
            out[name][:, 3:, 0] = 1  # segment: the table
            out[name][:, 3:, 1] = 1 + np.arange(cells) % 2  # column 1, 2, 1, 2, ...
            out[name][:, 3:, 2] = 1 + np.arange(cells) // 2  # row 1, 1, 2, 2, ...
        elif name == "global_attention_mask":  # Longformer: the first token global (its QA head's default
            out[name] = np.zeros(shape, np.int64)  # needs separator tokens to place them)
            out[name][..., 0] = 1
        elif name == "noise":
            out[name] = rng.uniform(size=shape).astype(np.float32)
        elif name == "input_points":
            out[name] = rng.uniform(0, 64, size=shape).astype(np.float32)
        elif name.endswith("_ids"):
            out[name] = rng.integers(3, family.vocab, shape).astype(np.int64)
            if name == "input_ids" and family.eos is not None:  # BART-style classifiers pool the last EOS
                out[name][..., -1] = family.eos
        else:
            out[name] = rng.normal(size=shape).astype(np.float32)
    return out


def tf_outputs(output: Any) -> dict[str, np.ndarray]:
    """Every tensor field of a transformers TF output, by name. A nested sub-model's output (CLIP's
    ``text_model_output``) is an intermediate, not compared: transformers 5 redefined some of its fields
    (CLIP's tower ``pooler_output`` is the projected embedding there)."""
    out = {}
    for name, value in output.items():
        if name in SKIPPED_OUTPUTS or name.endswith(("_hidden_states", "_attentions", "past_key_values")):
            continue
        if hasattr(value, "numpy"):
            out[name] = value.numpy()
    return out


def build_case(transformers: Any, tf_class: str, folder: Path, seed: int = 1, **changes: Any) -> dict[str, np.ndarray]:
    """Build, randomise, run and save one TF class into ``folder`` (``changes``: config attributes to
    set); returns TF's outputs."""
    family_name, head = TF_CLASSES[tf_class]
    family = FAMILIES[family_name]
    config = make_config(transformers, family, head)
    for name, value in changes.items():
        setattr(config, name, value)
    model = getattr(transformers, tf_class)(config)
    accepted = inspect.signature(model.call).parameters  # an encoder-only class takes no decoder inputs
    inputs = {k: v for k, v in make_inputs(family, tf_class, seed).items() if k in accepted}
    model(inputs, training=False)  # builds every variable
    randomise_tf(model, seed=seed + 1)
    expected = tf_outputs(model(inputs, training=False))
    model.save_pretrained(folder / "repo")
    np.savez(folder / "inputs.npz", **inputs)
    np.savez(folder / "expected.npz", **expected)
    return expected


def randomise_tf(model: Any, seed: int) -> None:
    from tests.corpus.conftest import randomise_tf as randomise

    randomise(model, seed)


def build_all(root: Path, names: list[str]) -> None:
    """``build_case`` for each of ``names`` into ``root/<name>``; a case whose TF side raises leaves
    ``error.txt`` (one line) instead. Run as ``python -m tests.hf.corpus ROOT NAME...`` by the corpus test:
    in a process of its own, transformers' TF classes see no Keras state other test files left behind (in
    a full run, IDEFICS' TF build raised KeyError: 'args' after other suites had run in the worker; alone it builds)."""
    from tests.corpus.conftest import require_transformers

    transformers = require_transformers()
    for name in names:
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        try:
            build_case(transformers, name, folder)
        except Exception as exc:  # the TF side itself failed: that case's test says so, the others run
            (folder / "error.txt").write_text(f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}\n")


if __name__ == "__main__":
    import sys

    build_all(Path(sys.argv[1]), sys.argv[2:])
