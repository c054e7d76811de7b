"""The keras-hub configurations the corpus tests build (tiny, each choosing the options real presets use):
name -> (keras-hub class, constructor arguments). ``test_keras_hub.py`` checks each twice against
keras-hub; ``test_keras_hub_tasks.py`` wraps some in Tasks."""

from __future__ import annotations

from typing import Any

SMALL = dict(num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16, max_sequence_length=16)
LLM = dict(num_layers=2, num_query_heads=4, num_key_value_heads=2, hidden_dim=16, intermediate_dim=32)
RESNET = dict(input_conv_filters=[64], input_conv_kernel_sizes=[7], stackwise_num_filters=[64, 8],
              stackwise_num_blocks=[2, 1], stackwise_num_strides=[1, 2], image_shape=(32, 32, 3))
# MobileNetV3 small as keras-hub converts it from timm, two stacks: SE in the depthwise block, relu then
# hard_swish inverted residual blocks, SE on and off, 3x3 and 5x5 depthwise convs, residuals where stride is 1
MOBILENET = dict(stackwise_num_blocks=[2, 2], stackwise_expansion=[[16, 24], [24, 32]],
                 stackwise_num_filters=[[8, 8], [16, 16]], stackwise_kernel_size=[[3, 3], [5, 5]],
                 stackwise_num_strides=[[2, 1], [2, 1]], stackwise_se_ratio=[[None, None], [0.25, 0.25]],
                 stackwise_activation=[["relu", "relu"], ["hard_swish", "hard_swish"]],
                 stackwise_padding=[[1, 1], [2, 2]], output_num_filters=32, input_num_filters=8,
                 depthwise_filters=8, depthwise_stride=2, depthwise_residual=False, squeeze_and_excite=0.5,
                 last_layer_filter=32, input_activation="hard_swish", output_activation="hard_swish",
                 image_shape=(32, 32, 3))
DINOV2 = dict(name="dinov2_backbone", patch_size=4, num_layers=2, hidden_dim=8, num_heads=2, intermediate_dim=16)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "bert": ("BertBackbone", dict(SMALL, vocabulary_size=50)),
    "electra": ("ElectraBackbone", dict(SMALL, vocab_size=50, embedding_dim=4)),
    "roberta": ("RobertaBackbone", dict(SMALL, vocabulary_size=50)),
    "distil_bert": ("DistilBertBackbone", dict(SMALL, vocabulary_size=50)),
    "distil_bert_no_dropout": ("DistilBertBackbone", dict(SMALL, vocabulary_size=50, dropout=0.0)),
    "albert": ("AlbertBackbone", dict(SMALL, num_layers=4, num_groups=2, num_inner_repetitions=1, vocabulary_size=50,
                                      embedding_dim=4)),
    "gpt2": ("GPT2Backbone", dict(SMALL, vocabulary_size=50)),
    "opt": ("OPTBackbone", dict(SMALL, vocabulary_size=50)),
    "llama": ("LlamaBackbone", dict(LLM, vocabulary_size=50)),
    # Llama 3 (head_dim 8: four rotary frequencies): 3.0's rope_max_wavelength; 3.1's and 3.2's smoothing, whose
    # wavelengths 6, 167, 4443 and 118143 fall in its high, high, medium and low bands (2048 and 8192 apart);
    # the same bands at wavelength 100 and length 128 (6, 20, 63, 199; 32, 128), where they move the outputs by 13%
    "llama3_no_smoothing": ("Llama3Backbone", dict(LLM, vocabulary_size=50, hidden_dim=32, rope_max_wavelength=500000)),
    "llama3_1": ("Llama3Backbone", dict(LLM, vocabulary_size=50, hidden_dim=32, rope_max_wavelength=500000,
                                        rope_frequency_adjustment_factor=8.0, rope_low_freq_factor=1.0,
                                        rope_high_freq_factor=4.0, rope_pretraining_sequence_length=8192)),
    "llama3_2": ("Llama3Backbone", dict(LLM, vocabulary_size=50, hidden_dim=32, rope_max_wavelength=500000,
                                        rope_frequency_adjustment_factor=32.0, rope_low_freq_factor=1.0,
                                        rope_high_freq_factor=4.0, rope_pretraining_sequence_length=8192)),
    "llama3_smoothing_visible": ("LlamaBackbone", dict(LLM, vocabulary_size=50, hidden_dim=32, rope_max_wavelength=100,
                                                       rope_frequency_adjustment_factor=8.0, rope_low_freq_factor=1,
                                                       rope_high_freq_factor=4, rope_pretraining_sequence_length=128)),
    "mistral": ("MistralBackbone", dict(LLM, vocabulary_size=50, sliding_window=3)),
    "qwen3": ("Qwen3Backbone", dict(LLM, vocabulary_size=50, head_dim=4, sliding_window_size=4)),
    # the per-head query/key norms keep Qwen3Attention's epsilon (1e-5) whatever the backbone's is: here 1e-3
    # (a file converted with the backbone's value there is 2e-3 off); wider heads, no window, scaled rope
    "qwen3_epsilon": ("Qwen3Backbone", dict(LLM, vocabulary_size=50, head_dim=8, layer_norm_epsilon=1e-3,
                                            rope_scaling_factor=2.0, sliding_window_size=None,
                                            tie_word_embeddings=False)),
    # Qwen 2 / 2.5: biased query/key/value projections; the second with Qwen 2.5's rope wavelength, a window of 3,
    # a scaled rope, an epsilon far from the default and an untied output embedding
    "qwen": ("QwenBackbone", dict(LLM, vocabulary_size=50)),
    "qwen_window": ("QwenBackbone", dict(LLM, vocabulary_size=50, rope_max_wavelength=1000000, rope_scaling_factor=2.0,
                                         layer_norm_epsilon=1e-3, use_sliding_window_attention=True,
                                         sliding_window_size=3, tie_word_embeddings=False)),
    "vit": ("ViTBackbone", dict(image_shape=(16, 16, 3), patch_size=4, num_layers=2, num_heads=2, hidden_dim=8,
                                mlp_dim=16)),
    "gemma": ("GemmaBackbone", dict(LLM, vocabulary_size=50, head_dim=4)),
    "gemma2": ("GemmaBackbone", dict(LLM, vocabulary_size=50, head_dim=4, use_post_ffw_norm=True,
                                     use_post_attention_norm=True, attention_logit_soft_cap=5.0,
                                     use_sliding_window_attention=True, sliding_window_size=3,
                                     query_head_dim_normalize=False, final_logit_soft_cap=3.0)),
    # keras-hub's blocks ignore both the backbone's layer_norm_epsilon (only the final norm takes it) and
    # query_head_dim_normalize (queries scaled by 1/sqrt(head_dim), here 8, not hidden / heads = 4)
    "gemma2_block_defaults": ("GemmaBackbone", dict(LLM, vocabulary_size=50, head_dim=8, layer_norm_epsilon=1e-2,
                                                    query_head_dim_normalize=False, use_post_ffw_norm=True,
                                                    use_post_attention_norm=True)),
    "whisper": ("WhisperBackbone", dict(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16,
                                        num_mels=6, max_encoder_sequence_length=20, max_decoder_sequence_length=12)),
    "deit": ("DeiTBackbone", dict(image_shape=(16, 16, 3), patch_size=4, num_layers=2, num_heads=2, hidden_dim=8,
                                  intermediate_dim=16)),
    "t5": ("T5Backbone", dict(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16)),
    "vgg": ("VGGBackbone", dict(stackwise_num_repeats=[2, 1], stackwise_num_filters=[4, 8], image_shape=(16, 16, 3))),
    "resnet_v1": ("ResNetBackbone", dict(RESNET, block_type="bottleneck_block")),
    "resnet_v2": ("ResNetBackbone", dict(RESNET, block_type="basic_block", use_pre_activation=True)),
    "resnet_vd": ("ResNetBackbone", dict(RESNET, block_type="basic_block_vd", input_conv_filters=[8, 8, 64],
                                         input_conv_kernel_sizes=[3, 3, 3])),
    "efficientnet": ("EfficientNetBackbone", dict(
        stackwise_width_coefficients=[1.0, 1.1], stackwise_depth_coefficients=[1.0, 1.2], stackwise_kernel_sizes=[3, 5],
        stackwise_num_repeats=[1, 2], stackwise_input_filters=[8, 8], stackwise_output_filters=[8, 16],
        stackwise_expansion_ratios=[1, 4], stackwise_squeeze_and_excite_ratios=[0.25, 0.25], stackwise_strides=[1, 2],
        stackwise_block_types=["v1", "v1"], stackwise_force_input_filters=[0, 0], stackwise_nores_option=[False, False],
        dropout=0.2, min_depth=None, use_depth_divisor_as_min_depth=True, input_shape=(32, 32, 3))),  # num_features is
    # not saved by keras-hub 0.32 (a file saved with another value does not reload in keras-hub either)
    # EfficientNetV2 (rw_s/rw_m): fused blocks (expand 1 with residuals, then expand 4 strided), unfused with SE;
    # the 5x5 stride-2 depthwise conv on 8x8 pads asymmetrically (TF "same")
    "efficientnet_v2": ("EfficientNetBackbone", dict(
        stackwise_width_coefficients=[1.0] * 4, stackwise_depth_coefficients=[1.0] * 4,
        stackwise_kernel_sizes=[3, 3, 5, 3], stackwise_num_repeats=[2, 2, 2, 1], stackwise_input_filters=[8, 8, 16, 16],
        stackwise_output_filters=[8, 16, 16, 24], stackwise_expansion_ratios=[1, 4, 4, 6],
        stackwise_squeeze_and_excite_ratios=[0, 0, 0.25, 0.25], stackwise_strides=[1, 2, 2, 1],
        stackwise_block_types=["fused", "fused", "unfused", "unfused"], stackwise_force_input_filters=[0] * 4,
        activation="silu", input_shape=(32, 32, 3))),
    # EdgeTPU (el/em/es, timm's rounding): relu, a forced input width (block1a's conv takes the stem's 16 channels,
    # input_filters 24 sets its expansion), an odd size into the stride-2 "same" depthwise conv, an unfused
    # expand-1 block (k x k projection); nores=True is left out: keras-hub 0.32 does not save it
    "efficientnet_edgetpu": ("EfficientNetBackbone", dict(
        stackwise_width_coefficients=[1.2] * 4, stackwise_depth_coefficients=[1.0] * 4,
        stackwise_kernel_sizes=[3, 3, 5, 3], stackwise_num_repeats=[1, 2, 2, 1], stackwise_input_filters=[8, 8, 16, 16],
        stackwise_output_filters=[8, 16, 16, 16], stackwise_expansion_ratios=[4, 4, 4, 1],
        stackwise_squeeze_and_excite_ratios=[0] * 4, stackwise_strides=[1, 2, 2, 1],
        stackwise_block_types=["fused", "fused", "unfused", "unfused"], stackwise_force_input_filters=[20, 0, 0, 0],
        min_depth=None, use_depth_divisor_as_min_depth=True, cap_round_filter_decrease=True, dropout=0,
        activation="relu", input_shape=(34, 34, 3))),
    # EfficientNetV2 rw_t: a cba stack, fused expand-1 blocks with SE and their projection activation, unfused
    # with SE; "swish" as saved, another BatchNorm epsilon and momentum, the stem's "same" padding
    "efficientnet_cba": ("EfficientNetBackbone", dict(
        stackwise_width_coefficients=[0.8] * 3, stackwise_depth_coefficients=[0.9] * 3, stackwise_kernel_sizes=[3, 3, 3],
        stackwise_num_repeats=[2, 3, 2], stackwise_input_filters=[16, 16, 24], stackwise_output_filters=[16, 24, 32],
        stackwise_expansion_ratios=[1, 1, 4], stackwise_squeeze_and_excite_ratios=[0, 0.25, 0.25],
        stackwise_strides=[1, 2, 2], stackwise_block_types=["cba", "fused", "unfused"],
        stackwise_force_input_filters=[0] * 3, activation="swish", projection_activation="relu",
        batch_norm_epsilon=1e-3, batch_norm_momentum=0.99, include_stem_padding=False, stem_conv_padding="same",
        input_shape=(32, 32, 3))),
    # EfficientNet-lite0: v1 blocks, relu6, no SE, timm's rounding
    "efficientnet_lite": ("EfficientNetBackbone", dict(
        stackwise_width_coefficients=[1.0] * 3, stackwise_depth_coefficients=[1.0] * 3, stackwise_kernel_sizes=[3, 3, 5],
        stackwise_num_repeats=[1, 2, 1], stackwise_input_filters=[8, 8, 16], stackwise_output_filters=[8, 16, 24],
        stackwise_expansion_ratios=[1, 6, 6], stackwise_squeeze_and_excite_ratios=[0] * 3, stackwise_strides=[1, 2, 2],
        stackwise_block_types=["v1"] * 3, stackwise_force_input_filters=[0] * 3, min_depth=None,
        use_depth_divisor_as_min_depth=True, cap_round_filter_decrease=True, activation="relu6", dropout=0,
        input_shape=(32, 32, 3))),
    "mit": ("MiTBackbone", dict(layerwise_depths=[1, 2], num_layers=2, layerwise_num_heads=[1, 2],
                                layerwise_sr_ratios=[2, 1], max_drop_path_rate=0.1, layerwise_patch_sizes=[7, 3],
                                layerwise_strides=[4, 2], image_shape=(32, 32, 3), hidden_dims=[8, 16])),
    "densenet": ("DenseNetBackbone", dict(stackwise_num_repeats=[2, 2], growth_rate=4, image_shape=(32, 32, 3))),
    # CSPNet: the four presets' shapes (timm cspdarknet53, cspresnet50, cspresnext50, darknet53), then cs3 stages,
    # edge blocks, avg_down and non-leaky activations
    "cspnet_csp_dark": ("CSPNetBackbone", dict(
        stem_filters=8, stem_kernel_size=3, stem_strides=1, stem_padding="same", stackwise_depth=[1, 2],
        stackwise_strides=2, stackwise_num_filters=[8, 16], block_type="dark_block", stage_type="csp",
        bottle_ratio=(0.5, 1.0), block_ratio=(1.0, 0.5), expand_ratio=(2.0, 1.0), down_growth=True,
        image_shape=(32, 32, 3))),
    "cspnet_csp_resnet": ("CSPNetBackbone", dict(
        stem_filters=8, stem_kernel_size=7, stem_strides=4, stem_pooling="max", stackwise_depth=[1, 2],
        stackwise_strides=[1, 2], stackwise_num_filters=[16, 32], block_type="bottleneck_block", stage_type="csp",
        bottle_ratio=[0.5], block_ratio=[1.0], expand_ratio=[2.0], cross_linear=True, image_shape=(32, 32, 3))),
    "cspnet_csp_resnext": ("CSPNetBackbone", dict(
        stem_filters=8, stem_kernel_size=7, stem_strides=4, stem_pooling="max", stackwise_depth=[1, 2],
        stackwise_strides=[1, 2], stackwise_num_filters=[16, 32], block_type="bottleneck_block", stage_type="csp",
        groups=4, bottle_ratio=[1.0], block_ratio=[0.5], expand_ratio=[1.0], cross_linear=True,
        image_shape=(32, 32, 3))),
    "cspnet_darknet": ("CSPNetBackbone", dict(
        stem_filters=8, stem_kernel_size=3, stem_strides=1, stem_padding="same", stackwise_depth=[1, 2],
        stackwise_strides=[1, 2], stackwise_num_filters=[8, 16], block_type="dark_block", stage_type="dark",
        bottle_ratio=[0.5], image_shape=(32, 32, 3))),
    "cspnet_cs3": ("CSPNetBackbone", dict(
        stem_filters=[8, 16], stem_kernel_size=3, stem_strides=4, stackwise_depth=[1, 2], stackwise_strides=[1, 2],
        stackwise_num_filters=[16, 32], block_type="bottleneck_block", stage_type="cs3", activation="swish",
        block_ratio=0.5, image_shape=(32, 32, 3))),
    "cspnet_cs3_edge": ("CSPNetBackbone", dict(
        stem_filters=8, stem_kernel_size=3, stem_strides=2, stackwise_depth=[1, 2], stackwise_strides=[2],
        stackwise_num_filters=[8, 16], block_type="edge_block", stage_type="cs3", bottle_ratio=1.5,
        expand_ratio=2.0, image_shape=(32, 32, 3))),
    "cspnet_dark_avg_down": ("CSPNetBackbone", dict(
        stem_filters=8, stem_kernel_size=3, stem_strides=2, stackwise_depth=[1, 2], stackwise_strides=[2, 1],
        stackwise_num_filters=[8, 16], block_type="bottleneck_block", stage_type="dark", avg_down=True,
        activation="relu", bottle_ratio=0.5, image_shape=(32, 32, 3))),
    "cspnet_csp_avg_down": ("CSPNetBackbone", dict(
        stem_filters=8, stem_kernel_size=3, stem_strides=1, stem_padding="same", stackwise_depth=[1, 2],
        stackwise_strides=2, stackwise_num_filters=[8, 16], block_type="edge_block", stage_type="csp",
        avg_down=True, down_growth=True, bottle_ratio=0.5, expand_ratio=2.0, image_shape=(32, 32, 3))),
    "mobilenet_v3_small": ("MobileNetBackbone", MOBILENET),
    # V3 large's layout: a stride-1 residual depthwise block without SE, a stride-1 block that widens (no residual)
    "mobilenet_v3_large": ("MobileNetBackbone", dict(
        MOBILENET, stackwise_num_blocks=[2, 2, 1], stackwise_expansion=[[16, 24], [24, 40], [48]],
        stackwise_num_filters=[[8, 8], [16, 16], [24]], stackwise_kernel_size=[[3, 3], [5, 5], [3]],
        stackwise_num_strides=[[2, 1], [2, 1], [1]], stackwise_se_ratio=[[None, None], [0.25, 0.25], [None]],
        stackwise_activation=[["relu", "relu"], ["relu", "hard_swish"], ["hard_swish"]],
        stackwise_padding=[[1, 1], [2, 2], [1]], depthwise_stride=1, depthwise_residual=True,
        squeeze_and_excite=None)),
    # the relu6 stem of timm's non-V3 MobileNets, a residual depthwise block with SE, widths and a ratio that
    # adjust_channels rounds (20 -> 24, 12 -> 16, 24 * 0.3 -> 8)
    "mobilenet_relu6": ("MobileNetBackbone", dict(
        MOBILENET, stackwise_num_blocks=[1], stackwise_expansion=[[20]], stackwise_num_filters=[[12]],
        stackwise_kernel_size=[[3]], stackwise_num_strides=[[1]], stackwise_se_ratio=[[0.3]],
        stackwise_activation=[["relu6"]], stackwise_padding=[[1]], depthwise_stride=1, depthwise_residual=True,
        squeeze_and_excite=0.25, input_activation="relu6", output_activation="relu6")),
    # MobileNetV1's shape: no inverted residual blocks, the depthwise-separable block alone
    "mobilenet_v1_like": ("MobileNetBackbone", dict(
        MOBILENET, stackwise_num_blocks=[], stackwise_expansion=[], stackwise_num_filters=[],
        stackwise_kernel_size=[], stackwise_num_strides=[], stackwise_se_ratio=[], stackwise_activation=[],
        stackwise_padding=[], depthwise_filters=16, squeeze_and_excite=None, output_num_filters=None)),
    # HGNetV2 (named: keras-hub names its two layers after a named model, as when it loads the file) like the
    # SSLD presets B4-B6: no affine blocks, the first stage not downsampled, light blocks with 5x5 kernels last
    "hgnetv2_ssld_like": ("HGNetV2Backbone", dict(
        name="hgnetv2", depths=[1, 2, 2], embedding_size=8, hidden_sizes=[16, 16, 32], stem_channels=[3, 8, 8],
        hidden_act="relu", use_learnable_affine_block=False, stackwise_stage_filters=[
            [8, 8, 16, 1, 2, 3], [16, 8, 16, 2, 2, 3], [16, 8, 32, 2, 3, 5]], apply_downsample=[False, True, True],
        use_lightweight_conv_block=[False, False, True], image_shape=(32, 32, 3))),
    # B0-B3's default checkpoints: learnable affine blocks everywhere; odd sizes through the stem's one-sided pads
    "hgnetv2_lab": ("HGNetV2Backbone", dict(
        name="hgnetv2", depths=[1, 1, 2], embedding_size=8, hidden_sizes=[16, 24, 24], stem_channels=[3, 6, 8],
        hidden_act="relu", use_learnable_affine_block=True, stackwise_stage_filters=[
            [8, 4, 16, 1, 2, 3], [16, 8, 24, 1, 2, 3], [24, 8, 24, 2, 2, 5]], apply_downsample=[False, True, True],
        use_lightweight_conv_block=[False, True, True], image_shape=(29, 23, 3), out_features=["stage1", "stage3"])),
    # the stem's other activations, every stage downsampled, light blocks first
    "hgnetv2_gelu": ("HGNetV2Backbone", dict(
        name="hgnetv2", depths=[1, 2], embedding_size=4, hidden_sizes=[8, 8], stem_channels=[3, 4, 4],
        hidden_act="gelu", use_learnable_affine_block=True, stackwise_stage_filters=[
            [4, 4, 8, 1, 1, 3], [8, 4, 8, 2, 1, 3]], apply_downsample=[True, True],
        use_lightweight_conv_block=[True, False], image_shape=(30, 30, 3))),
    "hgnetv2_tanh": ("HGNetV2Backbone", dict(
        name="hgnetv2", depths=[1], embedding_size=4, hidden_sizes=[8], stem_channels=[3, 4, 4], hidden_act="tanh",
        use_learnable_affine_block=False, stackwise_stage_filters=[[4, 4, 8, 1, 2, 3]], apply_downsample=[True],
        use_lightweight_conv_block=[False], image_shape=(17, 17, 3))),
    # DINOv2 (named, as a preset loads: its layers get the name as a prefix): positions trained at the image size
    "dinov2": ("DINOV2Backbone", dict(DINOV2, image_shape=(16, 16, 3), position_embedding_shape=(16, 16, 3))),
    # positions resized by TF's bicubic: shrunk 6x6 -> 4x4 patches (as 518 -> 224 pixels shrinks 37 -> 16), grown
    # 4x4 -> 7x7 (a 30-pixel image: its last 2 pixel rows dropped by the patch conv), antialiased both ways as the
    # with-registers presets are; registers, the SwiGLU FFN, no mask token, drop path (identity at inference)
    "dinov2_downsample": ("DINOV2Backbone", dict(DINOV2, image_shape=(16, 16, 3), position_embedding_shape=(24, 24))),
    "dinov2_upsample": ("DINOV2Backbone", dict(DINOV2, image_shape=(30, 30, 3), position_embedding_shape=(16, 16, 3),
                                               use_mask_token=False, drop_path_rate=0.1)),
    "dinov2_registers_swiglu": ("DINOV2Backbone", dict(
        DINOV2, image_shape=(16, 16, 3), position_embedding_shape=(28, 28, 3), num_register_tokens=2,
        use_swiglu_ffn=True, layer_scale_init_value=1e-5, antialias_in_interpolation=True)),
    "dinov2_antialias_upsample": ("DINOV2Backbone", dict(
        DINOV2, image_shape=(28, 28, 3), position_embedding_shape=(16, 16, 3), num_register_tokens=1,
        antialias_in_interpolation=True)),
}
