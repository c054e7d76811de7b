"""OpenAI ImageGPT (``image-gpt/src/model.py``): GPT-2's names under ``model/`` with other pieces. Attention
kernels are einsum operands (heads, head_dim, d_model) with no ``w`` leaf and no bias: ``attn/q_proj``,
``k_proj``, ``v_proj`` go side by side into transformers' one ``c_attn`` (each (in, out) once its heads are
merged: the table's ``mha_out_kernel`` reshape and transpose, as the loader's ``reshape(n, n).T``), and
``attn/c_proj`` is (in, out) once merged (``merge_lead``). ``model/wte`` holds the colour clusters' rows and
``model/sos`` the start token, which transformers appends as ``wte``'s last row; ``model/wtet`` is the
untied output table (``lm_head``); the norms keep only a gain ``g``; ``mlp/c_fc|c_proj/w`` are (in, out)
with no bias. The biases transformers' ``Conv1D``s have are in no release: the class's own zeros, which the
4.57 loader left in place (``computed``). No ``global_step`` (4.57's loader stripped ``model/`` from every
name and would have taken it for a weight)."""

from __future__ import annotations

from . import Combine, Convention

LAYER = r"^model/h(\d+)/attn/"

CONVENTIONS = (
    Convention(
        name="OpenAI ImageGPT",
        model_types=("imagegpt",),
        bare="ImageGPTModel",
        detect=r"^model/h\d+/attn/q_proj$",
        combines=(Combine(into=r"model/h\1/attn/c_attn", axis=1,
                          parts=tuple((LAYER + f"{p}_proj$", "mha_out_kernel") for p in "qkv")),
                  Combine(into="model/wte", axis=0, parts=((r"^model/wte$", "identity"), (r"^model/sos$", "row")))),
        renames=((r"^model/wtet$", "lm_head/weight"),
                 (r"^model/", "transformer/"),
                 (r"/h(\d+)/", r"/h/\1/"),
                 (r"/(wte|wpe)$", r"/\1/weight"),
                 (r"/attn/(c_attn|c_proj)$", r"/attn/\1/weight"),  # no leaf: get_variable("c_proj", ...)
                 (r"/(w|g)$", "/weight")),
        heads=(("lm_head", "the generative head (model/wtet)"),),
        layouts=((r"\.attn\.c_proj\.weight$", "merge_lead"),
                 (r"^lm_head\.weight$", "identity")),  # wtet is read with transpose_b=True: (out, in) already
        computed=((r"\.(c_attn|c_proj|c_fc)\.bias$", "a bias the release's projections do not have (zeros)"),),
        loader="load_tf_weights_in_imagegpt",
        loader_class="ImageGPTForCausalImageModeling",
    ),
)
