"""Original TF1 checkpoints, written by the test under each release's own names and layouts (the names of
google-research BERT / ALBERT / ELECTRA's ``modeling.py``, OpenAI GPT-2's ``model.py``, mesh-TF T5), with
tiny sizes and seeded random values, plus optimizer slots and ``global_step`` as the releases hold them.

Nothing here comes from tf2torch: each table is checked by transformers 4.57's own
``load_tf_weights_in_<model>`` (the truth), which must fill every parameter of its class from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Shapes = dict[str, tuple[int, ...]]
V, P, T = 99, 64, 2  # vocabulary, positions, token types


def _dense(out: Shapes, scope: str, n_in: int, n_out: int) -> None:
    out[f"{scope}/kernel"] = (n_in, n_out)  # TF's Dense: (in, out)
    out[f"{scope}/bias"] = (n_out,)


def _norm(out: Shapes, scope: str, n: int) -> None:
    out[f"{scope}/gamma"] = (n,)
    out[f"{scope}/beta"] = (n,)


def _bert_layer(out: Shapes, scope: str, h: int, i: int) -> None:
    for proj in ("query", "key", "value"):
        _dense(out, f"{scope}/attention/self/{proj}", h, h)
    _dense(out, f"{scope}/attention/output/dense", h, h)
    _norm(out, f"{scope}/attention/output/LayerNorm", h)
    _dense(out, f"{scope}/intermediate/dense", h, i)
    _dense(out, f"{scope}/output/dense", i, h)
    _norm(out, f"{scope}/output/LayerNorm", h)


def _embeddings(out: Shapes, scope: str, e: int) -> None:
    for table, rows in (("word", V), ("position", P), ("token_type", T)):
        out[f"{scope}/{table}_embeddings"] = (rows, e)
    _norm(out, f"{scope}/LayerNorm", e)


def bert(layers: int = 2, h: int = 32, i: int = 37) -> Shapes:
    """google-research BERT after run_pretraining.py."""
    out: Shapes = {}
    _embeddings(out, "bert/embeddings", h)
    for n in range(layers):
        _bert_layer(out, f"bert/encoder/layer_{n}", h, i)
    _dense(out, "bert/pooler/dense", h, h)
    _dense(out, "cls/predictions/transform/dense", h, h)
    _norm(out, "cls/predictions/transform/LayerNorm", h)
    out["cls/predictions/output_bias"] = (V,)
    out["cls/seq_relationship/output_weights"] = (2, h)  # (out, in): read with transpose_b=True
    out["cls/seq_relationship/output_bias"] = (2,)
    return out


def electra(e: int = 16, h: int = 32, i: int = 37, g: int = 24, gi: int = 29, layers: int = 2) -> Shapes:
    """ELECTRA's pretraining checkpoint: the discriminator (electra/) and the generator (generator/), the
    generator sharing the discriminator's embeddings."""
    out: Shapes = {}
    _embeddings(out, "electra/embeddings", e)
    _dense(out, "electra/embeddings_project", e, h)
    for n in range(layers):
        _bert_layer(out, f"electra/encoder/layer_{n}", h, i)
    _dense(out, "discriminator_predictions/dense", h, h)
    _dense(out, "discriminator_predictions/dense_1", h, 1)
    _dense(out, "generator/embeddings_project", e, g)
    for n in range(layers):
        _bert_layer(out, f"generator/encoder/layer_{n}", g, gi)
    _dense(out, "generator_predictions/dense", g, e)
    _norm(out, "generator_predictions/LayerNorm", e)
    out["generator_predictions/output_bias"] = (V,)
    return out


def albert(e: int = 16, h: int = 32, i: int = 37) -> Shapes:
    """google-research ALBERT: one shared layer group."""
    out: Shapes = {}
    _embeddings(out, "bert/embeddings", e)
    _dense(out, "bert/encoder/embedding_hidden_mapping_in", e, h)
    inner = "bert/encoder/transformer/group_0/inner_group_0"
    for proj in ("query", "key", "value"):
        _dense(out, f"{inner}/attention_1/self/{proj}", h, h)
    _dense(out, f"{inner}/attention_1/output/dense", h, h)
    _norm(out, f"{inner}/LayerNorm", h)
    _dense(out, f"{inner}/ffn_1/intermediate/dense", h, i)
    _dense(out, f"{inner}/ffn_1/intermediate/output/dense", i, h)
    _norm(out, f"{inner}/LayerNorm_1", h)
    _dense(out, "bert/pooler/dense", h, h)
    _dense(out, "cls/predictions/transform/dense", h, e)
    _norm(out, "cls/predictions/transform/LayerNorm", e)
    out["cls/predictions/output_bias"] = (V,)
    out["cls/seq_relationship/output_weights"] = (2, h)
    out["cls/seq_relationship/output_bias"] = (2,)
    return out


def rembert(e: int = 16, h: int = 32, i: int = 37, layers: int = 2) -> Shapes:
    """google-research RemBERT: small input embeddings projected to the hidden size; its pretraining head."""
    out: Shapes = {}
    _embeddings(out, "bert/embeddings", e)
    _dense(out, "bert/encoder/embedding_hidden_mapping_in", e, h)
    for n in range(layers):
        _bert_layer(out, f"bert/encoder/layer_{n}", h, i)
    _dense(out, "bert/pooler/dense", h, h)
    _dense(out, "cls/predictions/transform/dense", h, 20)
    out["cls/predictions/output_embedding"] = (V, 20)
    out["cls/predictions/output_bias"] = (V,)
    return out


def big_bird(h: int = 32, i: int = 37, heads: int = 4, layers: int = 2) -> Shapes:
    """google-research BigBird: 3-D attention kernels (Dense3dLayer), the embeddings' norm under encoder/."""
    out: Shapes = {}
    for table, rows in (("word", V), ("position", P), ("token_type", T)):
        out[f"bert/embeddings/{table}_embeddings"] = (rows, h)
    _norm(out, "bert/encoder/LayerNorm", h)
    d = h // heads
    for n in range(layers):
        s = f"bert/encoder/layer_{n}"
        for proj in ("query", "key", "value"):
            out[f"{s}/attention/self/{proj}/kernel"] = (h, heads, d)
            out[f"{s}/attention/self/{proj}/bias"] = (heads, d)
        out[f"{s}/attention/output/dense/kernel"] = (heads, d, h)
        out[f"{s}/attention/output/dense/bias"] = (h,)
        _norm(out, f"{s}/attention/output/LayerNorm", h)
        _dense(out, f"{s}/intermediate/dense", h, i)
        _dense(out, f"{s}/output/dense", i, h)
        _norm(out, f"{s}/output/LayerNorm", h)
    _dense(out, "bert/pooler/dense", h, h)
    _dense(out, "cls/predictions/transform/dense", h, h)
    _norm(out, "cls/predictions/transform/LayerNorm", h)
    out["cls/predictions/output_bias"] = (V,)
    out["cls/seq_relationship/output_weights"] = (2, h)
    out["cls/seq_relationship/output_bias"] = (2,)
    return out


TAPAS_TYPES = (3, 256, 256, 2, 256, 256, 10)  # transformers' TapasConfig default type_vocab_sizes


def tapas(h: int = 32, i: int = 37, layers: int = 2, aggregations: int = 4) -> Shapes:
    """google-research TAPAS fine-tuned for table QA (WTQ-style: cell selection and aggregation heads)."""
    out: Shapes = {"bert/embeddings/word_embeddings": (V, h), "bert/embeddings/position_embeddings": (P, h)}
    for n, rows in enumerate(TAPAS_TYPES):
        out[f"bert/embeddings/token_type_embeddings_{n}"] = (rows, h)
    _norm(out, "bert/embeddings/LayerNorm", h)
    for n in range(layers):
        _bert_layer(out, f"bert/encoder/layer_{n}", h, i)
    _dense(out, "bert/pooler/dense", h, h)
    out |= {"output_weights": (h,), "output_bias": (), "column_output_weights": (h,), "column_output_bias": (),
            "output_weights_agg": (aggregations, h), "output_bias_agg": (aggregations,),
            "cls/seq_relationship/output_weights": (2, h), "cls/seq_relationship/output_bias": (2,)}
    return out


def roformer(layers: int = 2, h: int = 32, i: int = 37) -> Shapes:
    """ZhuiyiTechnology RoFormer: BERT's checkpoint without the position table (rotary positions), the pooler
    and the next-sentence head (transformers 4.57's loader raises on those: no release it read had them)."""
    return {k: v for k, v in bert(layers, h, i).items()
            if k != "bert/embeddings/position_embeddings" and not k.startswith(("bert/pooler/", "cls/seq_"))}


def convbert(e: int = 16, h: int = 32, i: int = 36, groups: int = 2, k: int = 5, layers: int = 2) -> Shapes:
    """YituTech ConvBERT (ELECTRA-style, under electra/): head_ratio 2 halves the attention heads, the other
    half is a span-based dynamic conv (separable conv1d, then dense kernels); feed-forwards grouped
    (``g_dense`` kernels (groups, in/groups, out/groups)); the pretraining generator beside it."""
    out: Shapes = {}
    _embeddings(out, "electra/embeddings", e)
    _dense(out, "electra/embeddings_project", e, h)
    a = h // 2  # head_ratio=2: the attention half
    for n in range(layers):
        s = f"electra/encoder/layer_{n}/attention/self"
        for proj in ("query", "key", "value"):
            _dense(out, f"{s}/{proj}", h, a)
        out[f"{s}/conv_attn_key/depthwise_kernel"] = (k, h, 1)  # separable_conv1d: (K, C, multiplier)
        out[f"{s}/conv_attn_key/pointwise_kernel"] = (1, h, a)  # (1, C, O)
        out[f"{s}/conv_attn_key/bias"] = (a,)
        _dense(out, f"{s}/conv_attn_kernel", a, 2 * k)  # heads(2) x kernel size
        _dense(out, f"{s}/conv_attn_point", h, a)
        o = f"electra/encoder/layer_{n}"
        _dense(out, f"{o}/attention/output/dense", h, h)
        _norm(out, f"{o}/attention/output/LayerNorm", h)
        out[f"{o}/intermediate/g_dense/kernel"] = (groups, h // groups, i // groups)
        out[f"{o}/intermediate/g_dense/bias"] = (i,)
        out[f"{o}/output/g_dense/kernel"] = (groups, i // groups, h // groups)
        out[f"{o}/output/g_dense/bias"] = (h,)
        _norm(out, f"{o}/output/LayerNorm", h)
    _dense(out, "discriminator_predictions/dense", h, h)
    _dense(out, "discriminator_predictions/dense_1", h, 1)
    _dense(out, "generator/embeddings_project", e, 24)
    _dense(out, "generator_predictions/dense", 24, e)
    out["generator_predictions/output_bias"] = (V,)
    return out


def xlnet(layers: int = 2, d: int = 32, heads: int = 4, inner: int = 37) -> Shapes:
    """zihangdai XLNet: 3-D attention kernels (d_model, n_head, d_head), relative biases stacked over layers."""
    h = d // heads
    out: Shapes = {"model/transformer/word_embedding/lookup_table": (V, d), "model/transformer/mask_emb/mask_emb": (1, 1, d)}
    for n in range(layers):
        s = f"model/transformer/layer_{n}"
        for proj in ("q", "k", "v", "o", "r"):
            out[f"{s}/rel_attn/{proj}/kernel"] = (d, heads, h)
        _norm(out, f"{s}/rel_attn/LayerNorm", d)
        _dense(out, f"{s}/ff/layer_1", d, inner)
        _dense(out, f"{s}/ff/layer_2", inner, d)
        _norm(out, f"{s}/ff/LayerNorm", d)
    for bias in ("r_r_bias", "r_w_bias", "r_s_bias"):
        out[f"model/transformer/{bias}"] = (layers, heads, h)
    out["model/transformer/seg_embed"] = (layers, 2, heads, h)
    out["model/lm_loss/bias"] = (V,)
    return out


def funnel(blocks: tuple[int, ...] = (1, 2), decoder: int = 1, d: int = 32, heads: int = 4, inner: int = 37) -> Shapes:
    """laiguokun Funnel-Transformer: one flat layer_<k> numbering over the encoder's blocks and the decoder."""
    h = d // heads
    out: Shapes = {"model/input/word_embedding/lookup_table": (V, d)}
    _norm(out, "model/input/layer_norm", d)
    n = sum(blocks)
    for k in range(n + decoder):
        s = f"model/{'encoder' if k < n else 'decoder'}/layer_{k}"
        for proj in ("q", "k", "v", "r"):
            out[f"{s}/rel_attn/{proj}/kernel"] = (d, heads, h)
        for proj in ("k", "v"):
            out[f"{s}/rel_attn/{proj}/bias"] = (heads, h)
        out[f"{s}/rel_attn/o/kernel"] = (heads, h, d)
        out[f"{s}/rel_attn/o/bias"] = (d,)
        for bias in ("r_w_bias", "r_r_bias", "r_s_bias"):
            out[f"{s}/rel_attn/{bias}"] = (heads, h)
        out[f"{s}/rel_attn/seg_embed"] = (2, heads, h)
        _norm(out, f"{s}/rel_attn/layer_norm", d)
        _dense(out, f"{s}/ff/layer_1", d, inner)
        _dense(out, f"{s}/ff/layer_2", inner, d)
        _norm(out, f"{s}/ff/layer_norm", d)
    return out


def adam_v1_slots(shapes: Shapes) -> Shapes:
    """tf.train.AdamOptimizer's slots (XLNet's release): ``<var>/Adam``, ``<var>/Adam_1``."""
    return {f"{name}/{slot}": shape for name, shape in shapes.items() for slot in ("Adam", "Adam_1")}


def _slim_conv(out: Shapes, scope: str, torch_shape: tuple[int, ...], depthwise: bool = False) -> None:
    """A slim conv + BatchNorm: kernel (H, W, in, out), depthwise (H, W, C, 1), from the torch conv's shape."""
    o, i, h, w = torch_shape
    out[f"{scope}/depthwise_weights" if depthwise else f"{scope}/weights"] = (h, w, o, 1) if depthwise else (h, w, i, o)
    for leaf in ("gamma", "beta", "moving_mean", "moving_variance"):
        out[f"{scope}/BatchNorm/{leaf}"] = (o,)


def _torch_shapes(model_class: str, config_class: str, **config: Any) -> dict[str, tuple[int, ...]]:
    import transformers  # the channel counts (depth multiplier, rounding) as the class computes them

    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**config))
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


MOBILENET_V1 = dict(depth_multiplier=0.25, image_size=32, num_labels=5)
MOBILENET_V2 = dict(depth_multiplier=0.35, image_size=32, num_labels=5)


def mobilenet_v1() -> Shapes:
    """TF-slim MobileNet v1: Conv2d_0, 13 depthwise/pointwise pairs, the 1x1-conv logits."""
    pt = _torch_shapes("MobileNetV1ForImageClassification", "MobileNetV1Config", **MOBILENET_V1)
    out: Shapes = {}
    _slim_conv(out, "MobilenetV1/Conv2d_0", pt["mobilenet_v1.conv_stem.convolution.weight"])
    for n in range(13):
        for j, kind in enumerate(("depthwise", "pointwise")):
            _slim_conv(out, f"MobilenetV1/Conv2d_{n + 1}_{kind}", pt[f"mobilenet_v1.layer.{2 * n + j}.convolution.weight"],
                       depthwise=kind == "depthwise")
    labels, features = pt["classifier.weight"]
    out["MobilenetV1/Logits/Conv2d_1c_1x1/weights"] = (1, 1, features, labels)
    out["MobilenetV1/Logits/Conv2d_1c_1x1/biases"] = (labels,)
    return out


def mobilenet_v2() -> Shapes:
    """TF-slim MobileNet v2: Conv, expanded_conv (no expand), expanded_conv_1..16, Conv_1, the logits."""
    pt = _torch_shapes("MobileNetV2ForImageClassification", "MobileNetV2Config", **MOBILENET_V2)
    out: Shapes = {}
    stem = "mobilenet_v2.conv_stem"
    _slim_conv(out, "MobilenetV2/Conv", pt[f"{stem}.first_conv.convolution.weight"])
    _slim_conv(out, "MobilenetV2/expanded_conv/depthwise", pt[f"{stem}.conv_3x3.convolution.weight"], depthwise=True)
    _slim_conv(out, "MobilenetV2/expanded_conv/project", pt[f"{stem}.reduce_1x1.convolution.weight"])
    for n in range(16):
        for part, module in (("expand", "expand_1x1"), ("depthwise", "conv_3x3"), ("project", "reduce_1x1")):
            _slim_conv(out, f"MobilenetV2/expanded_conv_{n + 1}/{part}",
                       pt[f"mobilenet_v2.layer.{n}.{module}.convolution.weight"], depthwise=part == "depthwise")
    _slim_conv(out, "MobilenetV2/Conv_1", pt["mobilenet_v2.conv_1x1.convolution.weight"])
    labels, features = pt["classifier.weight"]
    out["MobilenetV2/Logits/Conv2d_1c_1x1/weights"] = (1, 1, features, labels)
    out["MobilenetV2/Logits/Conv2d_1c_1x1/biases"] = (labels,)
    return out


def slim_slots(shapes: Shapes) -> Shapes:
    """slim's training: RMSProp's two slots per trainable variable, and an ExponentialMovingAverage shadow of
    every model variable (the moving statistics too)."""
    out: Shapes = {}
    for name, shape in shapes.items():
        if not name.endswith(("moving_mean", "moving_variance")):
            out[f"{name}/RMSProp"], out[f"{name}/RMSProp_1"] = shape, shape
        out[f"{name}/ExponentialMovingAverage"] = shape
    return out


def ema_shadows(shapes: Shapes) -> Shapes:
    """The ExponentialMovingAverage shadows alone (the MobileNet v2 case: RMSProp's slots are counted in v1's,
    and 4.57's loader reads each variable separately: fewer of them keep the test fast)."""
    return {name: shape for name, shape in slim_slots(shapes).items() if name.endswith("/ExponentialMovingAverage")}


def mobilebert(e: int = 16, h: int = 32, b: int = 24, i: int = 37, layers: int = 2) -> Shapes:
    """google-research MobileBERT: trigram embeddings, bottlenecks of width ``b``, FakeLayerNorm, two
    feed-forward networks per layer (the last one is the layer's own intermediate/output)."""
    out: Shapes = {"bert/embeddings/word_embeddings": (V, e), "bert/embeddings/position_embeddings": (P, h),
                   "bert/embeddings/token_type_embeddings": (T, h)}
    _dense(out, "bert/embeddings/embedding_transformation", 3 * e, h)
    _norm(out, "bert/embeddings/FakeLayerNorm", h)
    for n in range(layers):
        s = f"bert/encoder/layer_{n}"
        _dense(out, f"{s}/attention/self/query", b, b)
        _dense(out, f"{s}/attention/self/key", b, b)
        _dense(out, f"{s}/attention/self/value", h, b)  # values come from the full-width input
        _dense(out, f"{s}/attention/output/dense", b, b)
        _norm(out, f"{s}/attention/output/FakeLayerNorm", b)
        for scope in (f"{s}/ffn_layer_0", s):
            _dense(out, f"{scope}/intermediate/dense", b, i)
            _dense(out, f"{scope}/output/dense", i, b)
            _norm(out, f"{scope}/output/FakeLayerNorm", b)
        _dense(out, f"{s}/output/bottleneck/dense", b, h)
        _norm(out, f"{s}/output/bottleneck/FakeLayerNorm", h)
        for part in ("input", "attention"):
            _dense(out, f"{s}/bottleneck/{part}/dense", h, b)
            _norm(out, f"{s}/bottleneck/{part}/FakeLayerNorm", b)
    _dense(out, "bert/pooler/dense", h, h)
    _dense(out, "cls/predictions/transform/dense", h, h)
    _norm(out, "cls/predictions/transform/LayerNorm", h)
    out["cls/predictions/output_bias"] = (V,)
    out["cls/predictions/extra_output_weights"] = (V, h - e)  # the output rows beyond the embedding's width
    out["cls/seq_relationship/output_weights"] = (2, h)
    out["cls/seq_relationship/output_bias"] = (2,)
    return out


def gpt2(layers: int = 2, e: int = 32) -> Shapes:
    """OpenAI GPT-2: 1x1-conv kernels stored (1, nx, nf), norms g/b."""
    out: Shapes = {"model/wte": (V, e), "model/wpe": (P, e)}
    for n in range(layers):
        s = f"model/h{n}"
        for part in ("ln_1", "ln_2"):
            out[f"{s}/{part}/g"], out[f"{s}/{part}/b"] = (e,), (e,)
        for conv, nx, nf in (("attn/c_attn", e, 3 * e), ("attn/c_proj", e, e), ("mlp/c_fc", e, 4 * e),
                             ("mlp/c_proj", 4 * e, e)):
            out[f"{s}/{conv}/w"], out[f"{s}/{conv}/b"] = (1, nx, nf), (nf,)
    out["model/ln_f/g"], out["model/ln_f/b"] = (e,), (e,)
    return out


def gpt_neo(layers: int = 2, e: int = 32) -> Shapes:
    """EleutherAI GPT-Neo (mesh-TF): attention projections without a kernel leaf, the MLP under conv1d_main."""
    out: Shapes = {"gpt2/wte": (V, e), "gpt2/wpe": (P, e)}
    for n in range(layers):
        s = f"gpt2/h{n}"
        for part in ("norm_1", "norm_2"):
            out[f"{s}/{part}/g"], out[f"{s}/{part}/b"] = (e,), (e,)
        for proj in ("q", "k", "v", "o"):
            out[f"{s}/attn/{proj}"] = (e, e)
        out[f"{s}/attn/compute_output_bias/o_b"] = (e,)
        _dense(out, f"{s}/mlp/conv1d_main/c_fc", e, 4 * e)
        _dense(out, f"{s}/mlp/conv1d_main/c_proj", 4 * e, e)
    out["gpt2/ln_f/g"], out["gpt2/ln_f/b"] = (e,), (e,)
    return out


def t5(layers: int = 2, d: int = 32, heads: int = 4, kv: int = 8, ff: int = 37, buckets: int = 32,
       v1_1: bool = True) -> Shapes:
    """mesh-TF T5 v1.1 (gated feed-forward wi_0/wi_1, untied decoder/logits), or v1.0 (one wi, the LM head
    tied to shared/embedding) with its norms spelled rms_norm/scale, the other spelling the loader reads."""
    out: Shapes = {"shared/embedding": (V, d)}
    inner = heads * kv

    def attention(scope: str, relative: bool) -> None:
        for proj in ("q", "k", "v"):
            out[f"{scope}/{proj}"] = (d, inner)
        out[f"{scope}/o"] = (inner, d)
        if relative:
            out[f"{scope}/relative_attention_bias"] = (heads, buckets)

    def ffn(scope: str) -> None:
        for wi in ("wi_0", "wi_1") if v1_1 else ("wi",):
            out[f"{scope}/DenseReluDense/{wi}/kernel"] = (d, ff)
        out[f"{scope}/DenseReluDense/wo/kernel"] = (ff, d)

    norm = "layer_norm" if v1_1 else "rms_norm"

    for stack in ("encoder", "decoder"):
        for n in range(layers):
            block = f"{stack}/block_{n:03d}"
            attention(f"{block}/layer_000/SelfAttention", relative=n == 0)
            out[f"{block}/layer_000/{norm}/scale"] = (d,)
            if stack == "decoder":
                attention(f"{block}/layer_001/EncDecAttention", relative=False)
                out[f"{block}/layer_001/{norm}/scale"] = (d,)
            last = f"{block}/layer_{1 if stack == 'encoder' else 2:03d}"
            ffn(last)
            out[f"{last}/{norm}/scale"] = (d,)
        out[f"{stack}/{'final_layer_norm' if v1_1 else 'rms_norm'}/scale"] = (d,)
    if v1_1:
        out["decoder/logits/kernel"] = (d, V)
    return out


def canine(h: int = 32, i: int = 37, layers: int = 2, hashes: int = 4, buckets: int = 64, rate: int = 2,
           up: int = 3) -> Shapes:
    """google-research CANINE (language/canine/modeling.py): hash embedders, a local initial encoder, the
    downsampling conv in the doubled scope ``initial_char_encoder/initial_char_encoder/chars_to_molecules``, the
    deep stack under ``bert/`` (no ``encoder/``), the upsampling conv under ``final_char_encoder``, a pretraining
    head variable of a name the loader skips (``cls``)."""
    out: Shapes = {f"char_embeddings/embeddings/HashBucketCodepointEmbedder_{n}": (buckets, h // hashes)
                   for n in range(hashes)}
    out["char_embeddings/char_position_embeddings"] = (buckets, h)  # transformers sizes it by the buckets
    out["char_embeddings/segment_embeddings"] = (16, h)  # token_type_vocab_size=16 in the release
    _norm(out, "char_embeddings/LayerNorm", h)
    _bert_layer(out, "initial_char_encoder/layer_0", h, i)
    conv = "initial_char_encoder/initial_char_encoder/chars_to_molecules"
    out[f"{conv}/conv/kernel"], out[f"{conv}/conv/bias"] = (rate, h, h), (h,)  # tf.layers.conv1d: (K, in, out)
    _norm(out, f"{conv}/LayerNorm", h)
    for n in range(layers):
        _bert_layer(out, f"bert/layer_{n}", h, i)
    out["final_char_encoder/conv/kernel"], out["final_char_encoder/conv/bias"] = (up, 2 * h, h), (h,)
    _norm(out, "final_char_encoder/LayerNorm", h)
    _bert_layer(out, "final_char_encoder/layer_0", h, i)
    _dense(out, "pooler/dense", h, h)
    _dense(out, "cls/predictions/dense", h, h)
    return out


def imagegpt(layers: int = 2, e: int = 32, heads: int = 2, clusters: int = 16) -> Shapes:
    """OpenAI ImageGPT (image-gpt/src/model.py): einsum attention kernels (heads, head_dim, d_model) with no leaf
    and no bias, the start token ``sos`` apart from ``wte``, the untied output table ``wtet``, gains only.
    head_dim 16, a perfect square as the releases' 64: transformers 4.57's ImageGPT divides the attention
    scores by int(sqrt(head_dim)) (its torch_float returned an int), 5.x by the float, so with head_dim 8 the
    two versions differ by 2.3e-1 on the same weights (measured; the release's model.py takes the float)."""
    out: Shapes = {"model/wte": (clusters, e), "model/wpe": (P, e), "model/wtet": (clusters, e), "model/sos": (e,)}
    for n in range(layers):
        s = f"model/h{n}"
        out[f"{s}/ln_1/g"], out[f"{s}/ln_2/g"] = (e,), (e,)
        for proj in ("q_proj", "k_proj", "v_proj", "c_proj"):
            out[f"{s}/attn/{proj}"] = (heads, e // heads, e)
        out[f"{s}/mlp/c_fc/w"], out[f"{s}/mlp/c_proj/w"] = (e, 4 * e), (4 * e, e)
    out["model/ln_f/g"] = (e,)
    return out


def adam_slots(shapes: Shapes) -> Shapes:
    """AdamWeightDecayOptimizer's slots of every weight (google-research BERT / ALBERT / ELECTRA)."""
    return {f"{name}/{slot}": shape for name, shape in shapes.items() for slot in ("adam_m", "adam_v")}


def adafactor_slots(shapes: Shapes) -> Shapes:
    """mesh-TF Adafactor's factored second moments: row and column sums of a matrix, the full moment of a vector."""
    out: Shapes = {}
    for name, shape in shapes.items():
        if len(shape) == 2:
            out[f"{name}_slot_vr"], out[f"{name}_slot_vc"] = (shape[0],), (shape[1],)
        else:
            out[f"{name}_slot_v"] = shape
    return out


@dataclass(frozen=True)
class Case:
    """One original checkpoint converted to one class."""

    loader: str  # transformers 4.57's load_tf_weights_in_<model>
    truth_class: str  # the class that loader fills (the old conversion script's)
    shapes: Callable[[], Shapes]
    slots: Callable[[Shapes], Shapes]
    config: dict[str, Any]  # the --hf-config file, as the release (or transformers) writes it
    config_class: str
    hf_class: str | None  # --hf-class (None: the default)
    expected_class: str  # what OUT's config names
    inputs: tuple[str, ...] = ("input_ids",)
    loader_kwargs: dict[str, Any] = field(default_factory=dict)
    config_kwargs: dict[str, Any] = field(default_factory=dict)  # the release's keys as transformers names them
    global_step: bool = True  # OpenAI's GPT-2 release has none (its loader would take it for a weight)
    loader_takes_config: bool = True  # load_tf_weights_in_big_bird(model, path) has no config argument
    computed: str = ""  # regex of the keys the class computes itself (no loader sets them): not NaN-filled
    vocab: int = V  # token ids are drawn below it


BERT_CONFIG = dict(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                   max_position_embeddings=P, type_vocab_size=T, hidden_act="gelu", hidden_dropout_prob=0.1,
                   attention_probs_dropout_prob=0.1, initializer_range=0.02)  # bert_config.json: no model_type
ELECTRA = dict(model_type="electra", vocab_size=V, embedding_size=16, num_hidden_layers=2, max_position_embeddings=P,
               type_vocab_size=T)
ALBERT_CONFIG = dict(vocab_size=V, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_hidden_groups=1,
                     inner_group_num=1, num_attention_heads=4, intermediate_size=37, max_position_embeddings=P,
                     type_vocab_size=T, hidden_act="gelu", down_scale_factor=1, net_structure_type=0, gap_size=0,
                     num_memory_blocks=0, layers_to_keep=[])  # albert_config.json
MOBILEBERT_CONFIG = dict(vocab_size=V, embedding_size=16, hidden_size=32, true_hidden_size=24, intra_bottleneck_size=24,
                         num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, num_feedforward_networks=2,
                         max_position_embeddings=P, type_vocab_size=T, hidden_act="relu", normalization_type="no_norm",
                         trigram_input=True, use_bottleneck=True, key_query_shared_bottleneck=True,
                         use_bottleneck_attention=False)  # mobilebert_config.json: no model_type
GPT2_HPARAMS = dict(n_vocab=V, n_ctx=P, n_embd=32, n_head=4, n_layer=2)  # hparams.json
T5_CONFIG = dict(model_type="t5", vocab_size=V, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4,
                 relative_attention_num_buckets=32, feed_forward_proj="gated-gelu", tie_word_embeddings=False)

# the release's own config (language/canine/modeling.py's CanineModelConfig): no model_type, max_positions
CANINE_CONFIG = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                     num_hash_functions=4, num_hash_buckets=64, max_positions=64, downsampling_rate=2,
                     upsampling_kernel_size=3, local_transformer_stride=4)

CASES: dict[str, Case] = {
    "bert-pretraining": Case("load_tf_weights_in_bert", "BertForPreTraining", bert, adam_slots, BERT_CONFIG,
                             "BertConfig", "BertForPreTraining", "BertForPreTraining"),
    "bert-bare": Case("load_tf_weights_in_bert", "BertForPreTraining", bert, adam_slots, BERT_CONFIG,
                      "BertConfig", None, "BertModel"),
    "electra-discriminator": Case("load_tf_weights_in_electra", "ElectraForPreTraining", electra, adam_slots,
                                  dict(ELECTRA, hidden_size=32, num_attention_heads=4, intermediate_size=37),
                                  "ElectraConfig", "ElectraForPreTraining", "ElectraForPreTraining"),
    "electra-generator": Case("load_tf_weights_in_electra", "ElectraForMaskedLM", electra, adam_slots,
                              dict(ELECTRA, hidden_size=24, num_attention_heads=4, intermediate_size=29),
                              "ElectraConfig", "ElectraForMaskedLM", "ElectraForMaskedLM",
                              loader_kwargs=dict(discriminator_or_generator="generator")),
    "albert-pretraining": Case("load_tf_weights_in_albert", "AlbertForPreTraining", albert, adam_slots,
                               ALBERT_CONFIG, "AlbertConfig", "AlbertForPreTraining", "AlbertForPreTraining"),
    "albert-bare": Case("load_tf_weights_in_albert", "AlbertForPreTraining", albert, adam_slots, ALBERT_CONFIG,
                        "AlbertConfig", None, "AlbertModel"),
    "mobilebert-pretraining": Case("load_tf_weights_in_mobilebert", "MobileBertForPreTraining", mobilebert, adam_slots,
                                   MOBILEBERT_CONFIG, "MobileBertConfig", "MobileBertForPreTraining",
                                   "MobileBertForPreTraining"),
    "rembert-bare": Case("load_tf_weights_in_rembert", "RemBertModel", rembert, adam_slots,
                         dict(model_type="rembert", vocab_size=V, hidden_size=32, num_hidden_layers=2,
                              num_attention_heads=4, input_embedding_size=16, output_embedding_size=20,
                              intermediate_size=37, max_position_embeddings=P, type_vocab_size=T),
                         "RemBertConfig", None, "RemBertModel"),
    "big_bird-pretraining": Case("load_tf_weights_in_big_bird", "BigBirdForPreTraining", big_bird, adam_slots,
                                 dict(model_type="big_bird", vocab_size=V, hidden_size=32, num_hidden_layers=2,
                                      num_attention_heads=4, intermediate_size=37, max_position_embeddings=P,
                                      type_vocab_size=T, attention_type="original_full"),
                                 "BigBirdConfig", "BigBirdForPreTraining", "BigBirdForPreTraining",
                                 loader_takes_config=False),
    "tapas-qa": Case("load_tf_weights_in_tapas", "TapasForQuestionAnswering", tapas, adam_slots,
                     dict(model_type="tapas", vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=37, max_position_embeddings=P, num_aggregation_labels=4),
                     "TapasConfig", "TapasForQuestionAnswering", "TapasForQuestionAnswering"),
    "roformer-mlm": Case("load_tf_weights_in_roformer", "RoFormerForMaskedLM", roformer, adam_slots,
                         dict(model_type="roformer", vocab_size=V, hidden_size=32, num_hidden_layers=2,
                              num_attention_heads=4, intermediate_size=37, max_position_embeddings=P,
                              type_vocab_size=T), "RoFormerConfig", "RoFormerForMaskedLM", "RoFormerForMaskedLM",
                         computed=r"embed_positions"),
    "convbert-bare": Case("load_tf_weights_in_convbert", "ConvBertModel", convbert, adam_slots,
                          dict(model_type="convbert", vocab_size=V, embedding_size=16, hidden_size=32,
                               num_hidden_layers=2, num_attention_heads=4, intermediate_size=36,
                               max_position_embeddings=P, type_vocab_size=T, num_groups=2, conv_kernel_size=5),
                          "ConvBertConfig", None, "ConvBertModel"),
    "mobilenet_v1-imgcls": Case("load_tf_weights_in_mobilenet_v1", "MobileNetV1ForImageClassification", mobilenet_v1,
                                slim_slots, dict(model_type="mobilenet_v1", **MOBILENET_V1), "MobileNetV1Config",
                                "MobileNetV1ForImageClassification", "MobileNetV1ForImageClassification",
                                inputs=("pixel_values",)),
    "mobilenet_v2-imgcls": Case("load_tf_weights_in_mobilenet_v2", "MobileNetV2ForImageClassification", mobilenet_v2,
                                ema_shadows, dict(model_type="mobilenet_v2", **MOBILENET_V2), "MobileNetV2Config",
                                "MobileNetV2ForImageClassification", "MobileNetV2ForImageClassification",
                                inputs=("pixel_values",)),
    "xlnet-lm": Case("load_tf_weights_in_xlnet", "XLNetLMHeadModel", xlnet, adam_v1_slots,
                     dict(model_type="xlnet", vocab_size=V, d_model=32, n_layer=2, n_head=4, d_inner=37),
                     "XLNetConfig", "XLNetLMHeadModel", "XLNetLMHeadModel"),
    "funnel-bare": Case("load_tf_weights_in_funnel", "FunnelModel", funnel, adam_slots,
                        dict(model_type="funnel", vocab_size=V, block_sizes=[1, 2], num_decoder_layers=1, d_model=32,
                             n_head=4, d_head=8, d_inner=37), "FunnelConfig", None, "FunnelModel"),
    "gpt2-bare": Case("load_tf_weights_in_gpt2", "GPT2Model", gpt2, lambda s: {}, GPT2_HPARAMS, "GPT2Config", None,
                      "GPT2Model", config_kwargs=dict(vocab_size=V, n_positions=P, n_embd=32, n_head=4, n_layer=2),
                      global_step=False),
    "gpt2-lm": Case("load_tf_weights_in_gpt2", "GPT2Model", gpt2, lambda s: {}, GPT2_HPARAMS, "GPT2Config",
                    "GPT2LMHeadModel", "GPT2LMHeadModel",
                    config_kwargs=dict(vocab_size=V, n_positions=P, n_embd=32, n_head=4, n_layer=2),
                    global_step=False),
    "gpt_neo-lm": Case("load_tf_weights_in_gpt_neo", "GPTNeoForCausalLM", gpt_neo, adam_slots,
                       dict(model_type="gpt_neo", vocab_size=V, max_position_embeddings=P, hidden_size=32,
                            num_layers=2, num_heads=4, attention_types=[[["global", "local"], 1]], window_size=4),
                       "GPTNeoConfig", "GPTNeoForCausalLM", "GPTNeoForCausalLM"),
    "t5-v1_1": Case("load_tf_weights_in_t5", "T5ForConditionalGeneration", t5, adafactor_slots, T5_CONFIG,
                    "T5Config", "T5ForConditionalGeneration", "T5ForConditionalGeneration",
                    inputs=("input_ids", "decoder_input_ids")),
    "t5-v1_0-bare": Case("load_tf_weights_in_t5", "T5Model", lambda: t5(v1_1=False), adafactor_slots,
                         dict(T5_CONFIG, feed_forward_proj="relu", tie_word_embeddings=True), "T5Config", None,
                         "T5Model", inputs=("input_ids", "decoder_input_ids")),
    "canine-bare": Case("load_tf_weights_in_canine", "CanineModel", canine, adam_slots, CANINE_CONFIG, "CanineConfig",
                        None, "CanineModel", config_kwargs={**{k: v for k, v in CANINE_CONFIG.items() if k != "max_positions"},
                                                   "max_position_embeddings": 64}),
    # transformers' vocabulary is the clusters and the start token: 16 + 1
    "imagegpt-lm": Case("load_tf_weights_in_imagegpt", "ImageGPTForCausalImageModeling", imagegpt, adam_slots,
                        dict(model_type="imagegpt", vocab_size=17, n_positions=P, n_embd=32, n_layer=2, n_head=2),
                        "ImageGPTConfig", "ImageGPTForCausalImageModeling", "ImageGPTForCausalImageModeling",
                        global_step=False, computed=r"\.(c_attn|c_proj|c_fc)\.bias$", vocab=17),
    "imagegpt-bare": Case("load_tf_weights_in_imagegpt", "ImageGPTForCausalImageModeling", imagegpt, adam_slots,
                          dict(model_type="imagegpt", vocab_size=17, n_positions=P, n_embd=32, n_layer=2, n_head=2),
                          "ImageGPTConfig", None, "ImageGPTModel", global_step=False,
                          computed=r"\.(c_attn|c_proj|c_fc)\.bias$", vocab=17),
}


def values(shapes: Shapes, seed: int) -> dict[str, np.ndarray]:
    """Seeded random values; norms' scales near 1 (a norm left at ones would hide a swapped pair), variances
    positive."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shapes.items():
        scale = name.rsplit("/", 1)[-1] in ("gamma", "g", "scale")
        value = (1 if scale else 0) + rng.normal(0, 0.2 if scale else 0.5, shape)
        if "moving_variance" in name:  # a variance (and its shadow) is positive: its square root is taken
            value = 0.5 + np.abs(value)
        out[name] = value.astype(np.float32)
    return out


@dataclass(frozen=True)
class Built:
    """A case's checkpoint, its truth (the 4.57 loader's weights, as the target class holds them), and
    the converted repository (``inputs.npz`` / ``expected.npz`` beside it, for the transformers 5 check)."""

    name: str
    prefix: Any  # Path of the checkpoint prefix
    config_file: Any
    truth: dict[str, Any]  # state_dict of expected_class, filled from the loader's model
    inputs: dict[str, np.ndarray]
    expected: np.ndarray  # the first output of expected_class with the truth weights
    out: Any  # the converted repository


def write_checkpoint(tf, prefix, tensors: dict[str, np.ndarray]) -> None:
    """A TF1 bundle (prefix.index + prefix.data-00000-of-00001) under exactly these names, as Saver writes it."""
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(tensors[n]) for n in names])


def first_output(output: Any) -> Any:
    """The logits where the class has them, else its first output (a bare model's last hidden state)."""
    logits = getattr(output, "logits", None)
    return logits if logits is not None else output[0]
