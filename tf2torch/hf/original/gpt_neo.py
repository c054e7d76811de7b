"""EleutherAI GPT-Neo (mesh-TF): ``gpt2/wte``, ``gpt2/wpe``, ``gpt2/h<i>/norm_1|norm_2/g|b``, the attention's
``attn/q|k|v|o`` (stored (in, out), no ``kernel`` leaf) and ``attn/compute_output_bias/o_b``, the MLP's
``mlp/conv1d_main/c_fc|c_proj/kernel|bias``, ``gpt2/ln_f``. transformers' loader also trimmed a padded
vocabulary from ``wte`` and cast bfloat16 to float32: here a padded table is a shape mismatch (refused),
and bfloat16 stays bfloat16 unless ``--dtype float32``."""

from __future__ import annotations

from . import Convention

CONVENTIONS = (
    Convention(
        name="EleutherAI GPT-Neo",
        model_types=("gpt_neo",),
        bare="GPTNeoModel",
        detect=r"^gpt2/h\d+/attn/q$",
        renames=((r"^gpt2/", "transformer/"),
                 (r"/h(\d+)/", r"/h/\1/"),
                 (r"/attn/(q|k|v)$", r"/attn/attention/\1_proj/weight"),
                 (r"/attn/o$", "/attn/attention/out_proj/weight"),
                 (r"/attn/compute_output_bias/o_b$", "/attn/attention/out_proj/bias"),
                 (r"/norm_(1|2)/", r"/ln_\1/"),
                 (r"/mlp/conv1d_main/", "/mlp/"),
                 (r"/(wte|wpe)$", r"/\1/weight"),
                 (r"/(kernel|g)$", "/weight"),
                 (r"/b$", "/bias")),
        loader="load_tf_weights_in_gpt_neo",
        loader_class="GPTNeoForCausalLM",
    ),
)
