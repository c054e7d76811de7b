"""Facts of the TFLite schema (v3, tensorflow/compiler/mlir/lite/schema/schema.fbs) the reader needs:
table slots, enum values, and which builtin options table each operator carries.

A table's fields are numbered in schema order (a union takes two slots: its type, then its value), so
SLOT below are those numbers. Only the options of the operators tf2torch converts are decoded; the
others are kept as their union type and ignored, since those operators are refused by name anyway.
"""

from __future__ import annotations

FILE_IDENTIFIER = b"TFL3"  # bytes 4..8 of every TFLite flatbuffer (after the root offset)
SCHEMA_VERSION = 3

# BuiltinOperator: the index in this tuple is the enum value (the schema numbers them 0, 1, 2, ...).
BUILTIN_OPS: tuple[str, ...] = (
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "DEPTH_TO_SPACE", "DEQUANTIZE",
    "EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED", "HASHTABLE_LOOKUP", "L2_NORMALIZATION", "L2_POOL_2D",
    "LOCAL_RESPONSE_NORMALIZATION", "LOGISTIC", "LSH_PROJECTION", "LSTM", "MAX_POOL_2D", "MUL", "RELU",
    "RELU_N1_TO_1", "RELU6", "RESHAPE", "RESIZE_BILINEAR", "RNN", "SOFTMAX", "SPACE_TO_DEPTH", "SVDF", "TANH",
    "CONCAT_EMBEDDINGS", "SKIP_GRAM", "CALL", "CUSTOM", "EMBEDDING_LOOKUP_SPARSE", "PAD",
    "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "TRANSPOSE", "MEAN", "SUB",
    "DIV", "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM", "STRIDED_SLICE", "BIDIRECTIONAL_SEQUENCE_RNN", "EXP",
    "TOPK_V2", "SPLIT", "LOG_SOFTMAX", "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU", "MAXIMUM",
    "ARG_MAX", "MINIMUM", "LESS", "NEG", "PADV2", "GREATER", "GREATER_EQUAL", "LESS_EQUAL", "SELECT", "SLICE", "SIN",
    "TRANSPOSE_CONV", "SPARSE_TO_DENSE", "TILE", "EXPAND_DIMS", "EQUAL", "NOT_EQUAL", "LOG", "SUM", "SQRT", "RSQRT",
    "SHAPE", "POW", "ARG_MIN", "FAKE_QUANT", "REDUCE_PROD", "REDUCE_MAX", "PACK", "LOGICAL_OR", "ONE_HOT",
    "LOGICAL_AND", "LOGICAL_NOT", "UNPACK", "REDUCE_MIN", "FLOOR_DIV", "REDUCE_ANY", "SQUARE", "ZEROS_LIKE", "FILL",
    "FLOOR_MOD", "RANGE", "RESIZE_NEAREST_NEIGHBOR", "LEAKY_RELU", "SQUARED_DIFFERENCE", "MIRROR_PAD", "ABS",
    "SPLIT_V", "UNIQUE", "CEIL", "REVERSE_V2", "ADD_N", "GATHER_ND", "COS", "WHERE", "RANK", "ELU",
    "REVERSE_SEQUENCE", "MATRIX_DIAG", "QUANTIZE", "MATRIX_SET_DIAG", "ROUND", "HARD_SWISH", "IF", "WHILE",
    "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "SCATTER_ND", "SELECT_V2", "DENSIFY", "SEGMENT_SUM",
    "BATCH_MATMUL", "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM", "CALL_ONCE", "BROADCAST_TO", "RFFT2D", "CONV_3D",
    "IMAG", "REAL", "COMPLEX_ABS", "HASHTABLE", "HASHTABLE_FIND", "HASHTABLE_IMPORT", "HASHTABLE_SIZE", "REDUCE_ALL",
    "CONV_3D_TRANSPOSE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "BROADCAST_ARGS",
    "RANDOM_STANDARD_NORMAL", "BUCKETIZE", "RANDOM_UNIFORM", "MULTINOMIAL", "GELU", "DYNAMIC_UPDATE_SLICE",
    "RELU_0_TO_1", "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_SUM", "ATAN2",
    "UNSORTED_SEGMENT_MIN", "SIGN", "BITCAST", "BITWISE_XOR", "RIGHT_SHIFT", "STABLEHLO_LOGISTIC", "STABLEHLO_ADD",
    "STABLEHLO_DIVIDE", "STABLEHLO_MULTIPLY", "STABLEHLO_MAXIMUM", "STABLEHLO_RESHAPE", "STABLEHLO_CLAMP",
    "STABLEHLO_CONCATENATE", "STABLEHLO_BROADCAST_IN_DIM", "STABLEHLO_CONVOLUTION", "STABLEHLO_SLICE",
    "STABLEHLO_CUSTOM_CALL", "STABLEHLO_REDUCE", "STABLEHLO_ABS", "STABLEHLO_AND", "STABLEHLO_COSINE",
    "STABLEHLO_EXPONENTIAL", "STABLEHLO_FLOOR", "STABLEHLO_LOG", "STABLEHLO_MINIMUM", "STABLEHLO_NEGATE",
    "STABLEHLO_OR", "STABLEHLO_POWER", "STABLEHLO_REMAINDER", "STABLEHLO_RSQRT", "STABLEHLO_SELECT",
    "STABLEHLO_SUBTRACT", "STABLEHLO_TANH", "STABLEHLO_SCATTER", "STABLEHLO_COMPARE", "STABLEHLO_CONVERT",
    "STABLEHLO_DYNAMIC_SLICE", "STABLEHLO_DYNAMIC_UPDATE_SLICE", "STABLEHLO_PAD", "STABLEHLO_IOTA",
    "STABLEHLO_DOT_GENERAL", "STABLEHLO_REDUCE_WINDOW", "STABLEHLO_SORT", "STABLEHLO_WHILE", "STABLEHLO_GATHER",
    "STABLEHLO_TRANSPOSE", "DILATE", "STABLEHLO_RNG_BIT_GENERATOR", "REDUCE_WINDOW", "STABLEHLO_COMPOSITE",
    "STABLEHLO_SHIFT_LEFT", "STABLEHLO_CBRT", "STABLEHLO_CASE",
)
CUSTOM = 32
# OperatorCode.deprecated_builtin_code is an int8: codes past 127 are stored in builtin_code and the
# deprecated field holds this placeholder (schema: PLACEHOLDER_FOR_GREATER_OP_CODES).
PLACEHOLDER_FOR_GREATER_OP_CODES = 127

# TensorType -> numpy storage (None: a type tf2torch never reads the data of).
TENSOR_TYPES: dict[int, tuple[str, str | None]] = {
    0: ("float32", "<f4"), 1: ("float16", "<f2"), 2: ("int32", "<i4"), 3: ("uint8", "|u1"), 4: ("int64", "<i8"),
    5: ("string", None), 6: ("bool", "|b1"), 7: ("int16", "<i2"), 8: ("complex64", None), 9: ("int8", "|i1"),
    10: ("float64", "<f8"), 11: ("complex128", None), 12: ("uint64", "<u8"), 13: ("resource", None),
    14: ("variant", None), 15: ("uint32", "<u4"), 16: ("uint16", "<u2"), 17: ("int4", None), 18: ("bfloat16", None),
    19: ("int2", None), 20: ("uint4", None),
}

ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}
PADDINGS = {0: "SAME", 1: "VALID"}
MIRROR_MODES = {0: "REFLECT", 1: "SYMMETRIC"}

# Builtin options: operator -> (BuiltinOptions union type, fields as (key, slot, struct code, default)).
# Struct codes: b int8, i int32, f float32, ? bool; "i*" a vector of int32. Enum-valued int8 fields
# (padding, fused_activation_function, mode) are translated with the tables above by the reader.
_POOL = (5, (("padding", 0, "b", 0), ("stride_w", 1, "i", 0), ("stride_h", 2, "i", 0), ("filter_width", 3, "i", 0),
             ("filter_height", 4, "i", 0), ("fused_activation_function", 5, "b", 0)))
_FUSED_ONLY_SLOT0 = (("fused_activation_function", 0, "b", 0),)
OPTIONS: dict[str, tuple[int, tuple[tuple[str, int, str, object], ...]]] = {
    "CONV_2D": (1, (("padding", 0, "b", 0), ("stride_w", 1, "i", 0), ("stride_h", 2, "i", 0),
                    ("fused_activation_function", 3, "b", 0), ("dilation_w_factor", 4, "i", 1),
                    ("dilation_h_factor", 5, "i", 1))),
    "DEPTHWISE_CONV_2D": (2, (("padding", 0, "b", 0), ("stride_w", 1, "i", 0), ("stride_h", 2, "i", 0),
                              ("depth_multiplier", 3, "i", 0), ("fused_activation_function", 4, "b", 0),
                              ("dilation_w_factor", 5, "i", 1), ("dilation_h_factor", 6, "i", 1))),
    "AVERAGE_POOL_2D": _POOL, "MAX_POOL_2D": _POOL, "L2_POOL_2D": _POOL,
    "FULLY_CONNECTED": (8, (("fused_activation_function", 0, "b", 0), ("weights_format", 1, "b", 0),
                            ("keep_num_dims", 2, "?", False), ("asymmetric_quantize_inputs", 3, "?", False))),
    "SOFTMAX": (9, (("beta", 0, "f", 0.0),)),
    "CONCATENATION": (10, (("axis", 0, "i", 0), ("fused_activation_function", 1, "b", 0))),
    # pot_scale_int16: an int16 ADD / SUB takes LiteRT's power-of-two-scale kernel (the schema's default) or
    # the general one (TF's 16x8 converter writes false)
    "ADD": (11, (*_FUSED_ONLY_SLOT0, ("pot_scale_int16", 1, "?", True))), "MUL": (21, _FUSED_ONLY_SLOT0),
    "SUB": (28, (*_FUSED_ONLY_SLOT0, ("pot_scale_int16", 1, "?", True))),
    "DIV": (29, _FUSED_ONLY_SLOT0),
    "RESHAPE": (17, (("new_shape", 0, "i*", ()),)),
    "MEAN": (27, (("keep_dims", 0, "?", False),)), "SUM": (27, (("keep_dims", 0, "?", False),)),
    "REDUCE_MAX": (27, (("keep_dims", 0, "?", False),)), "REDUCE_MIN": (27, (("keep_dims", 0, "?", False),)),
    "REDUCE_PROD": (27, (("keep_dims", 0, "?", False),)),
    "SQUEEZE": (30, (("squeeze_dims", 0, "i*", ()),)),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": (71, (("fused_activation_function", 0, "b", 0), ("cell_clip", 1, "f", 0.0),
                                          ("proj_clip", 2, "f", 0.0), ("time_major", 3, "?", False),
                                          ("asymmetric_quantize_inputs", 4, "?", False),
                                          ("diagonal_recurrent_tensors", 5, "?", False))),
    "STRIDED_SLICE": (32, (("begin_mask", 0, "i", 0), ("end_mask", 1, "i", 0), ("ellipsis_mask", 2, "i", 0),
                           ("new_axis_mask", 3, "i", 0), ("shrink_axis_mask", 4, "i", 0), ("offset", 5, "?", False))),
    "RESIZE_BILINEAR": (15, (("align_corners", 2, "?", False), ("half_pixel_centers", 3, "?", False))),
    "RESIZE_NEAREST_NEIGHBOR": (74, (("align_corners", 0, "?", False), ("half_pixel_centers", 1, "?", False))),
    "TRANSPOSE_CONV": (49, (("padding", 0, "b", 0), ("stride_w", 1, "i", 0), ("stride_h", 2, "i", 0),
                            ("fused_activation_function", 3, "b", 0))),
    "BATCH_MATMUL": (101, (("adj_x", 0, "?", False), ("adj_y", 1, "?", False),
                           ("asymmetric_quantize_inputs", 2, "?", False))),
    "GATHER": (23, (("axis", 0, "i", 0), ("batch_dims", 1, "i", 0))),
    "SPLIT": (35, (("num_splits", 0, "i", 0),)), "SPLIT_V": (79, (("num_splits", 0, "i", 0),)),
    "PACK": (59, (("values_count", 0, "i", 0), ("axis", 1, "i", 0))),
    "UNPACK": (64, (("num", 0, "i", 0), ("axis", 1, "i", 0))),
    "LEAKY_RELU": (75, (("alpha", 0, "f", 0.0),)),
    "GELU": (116, (("approximate", 0, "?", False),)),
    "MIRROR_PAD": (77, (("mode", 0, "b", 0),)),
    "DEPTH_TO_SPACE": (94, (("block_size", 0, "i", 0),)), "SPACE_TO_DEPTH": (19, (("block_size", 0, "i", 0),)),
}
ENUM_FIELDS = {"padding": PADDINGS, "fused_activation_function": ACTIVATIONS, "mode": MIRROR_MODES}

# Slots of the tables the reader walks (schema field order; a union counts twice).
MODEL = {"version": 0, "operator_codes": 1, "subgraphs": 2, "description": 3, "buffers": 4, "metadata": 6,
         "signature_defs": 7}
OPERATOR_CODE = {"deprecated_builtin_code": 0, "custom_code": 1, "version": 2, "builtin_code": 3}
SUBGRAPH = {"tensors": 0, "inputs": 1, "outputs": 2, "operators": 3, "name": 4}
TENSOR = {"shape": 0, "type": 1, "buffer": 2, "name": 3, "quantization": 4, "is_variable": 5, "sparsity": 6,
          "shape_signature": 7}
QUANTIZATION = {"min": 0, "max": 1, "scale": 2, "zero_point": 3, "details_type": 4, "quantized_dimension": 6}
BUFFER = {"data": 0, "offset": 1, "size": 2}
OPERATOR = {"opcode_index": 0, "inputs": 1, "outputs": 2, "builtin_options_type": 3, "builtin_options": 4,
            "custom_options": 5, "intermediates": 8}
METADATA = {"name": 0, "buffer": 1}
SIGNATURE_DEF = {"inputs": 0, "outputs": 1, "signature_key": 2, "subgraph_index": 4}
TENSOR_MAP = {"name": 0, "tensor_index": 1}
