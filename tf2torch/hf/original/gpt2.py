"""OpenAI GPT-2 (``gpt-2/src/model.py``): ``model/wte``, ``model/wpe``, ``model/h<i>/ln_1/g|b``,
``attn/c_attn/w`` and ``c_proj``, ``mlp/c_fc`` and ``c_proj``, ``model/ln_f``. The ``w`` kernels are 1x1
convolutions stored ``[1, nx, nf]``; transformers' ``Conv1D`` keeps ``[nx, nf]``: the same numbers with the
leading axis dropped. The release's ``hparams.json`` names the sizes ``n_vocab`` and ``n_ctx``."""

from __future__ import annotations

from . import Convention

CONVENTIONS = (
    Convention(
        name="OpenAI GPT-2",
        model_types=("gpt2",),
        bare="GPT2Model",
        detect=r"^model/h\d+/attn/c_attn/w$",
        renames=((r"^model/", "transformer/"),
                 (r"/h(\d+)/", r"/h/\1/"),
                 (r"/(wte|wpe)$", r"/\1/weight"),
                 (r"/(w|g)$", "/weight"),
                 (r"/b$", "/bias")),
        layouts=((r"\.(c_attn|c_proj|c_fc)\.weight$", "squeeze_lead"),),
        config_keys=(("n_vocab", "vocab_size"), ("n_ctx", "n_positions")),
        loader="load_tf_weights_in_gpt2",
        loader_class="GPT2Model",
    ),
)
