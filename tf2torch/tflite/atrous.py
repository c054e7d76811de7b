"""Dilated convolutions as TF's converter writes them: SPACE_TO_BATCH_ND → CONV_2D / DEPTHWISE_CONV_2D
(VALID, stride 1) → BATCH_TO_SPACE_ND, put back into one operator before the walk.

TF lowers a dilated conv to the "atrous" trick (``tf.nn.atrous_conv2d``): pad, split the image into
``block × block`` interleaved sub-images (SPACE_TO_BATCH_ND), run the undilated conv on each, interleave
them back and crop (BATCH_TO_SPACE_ND). That is exactly the dilated VALID conv of the padded input,
cropped: so the three operators become one conv with ``dilation = block``, the space-to-batch paddings as
``atrous_pad`` and the batch-to-space crops as ``atrous_crop`` (``ops_nn`` pads and crops around it).
Only the exact pattern is rewritten: each intermediate tensor read by the next operator alone.
"""

from __future__ import annotations

import dataclasses

from ..readers.tflite.model import LiteModel, LiteOperator, LiteSubgraph

_CONVS = ("CONV_2D", "DEPTHWISE_CONV_2D")


def fold_atrous(model: LiteModel, graph: LiteSubgraph) -> list[LiteOperator]:
    """The operators with each SPACE_TO_BATCH_ND → conv → BATCH_TO_SPACE_ND chain made one conv."""
    readers: dict[int, list[int]] = {}
    for op in graph.operators:
        for i in op.inputs:
            readers.setdefault(i, []).append(op.index)
    by_output = {i: op for op in graph.operators for i in op.outputs}
    dropped: set[int] = set()
    replaced: dict[int, LiteOperator] = {}
    for bts in graph.operators:
        if bts.op != "BATCH_TO_SPACE_ND" or len(bts.inputs) != 3:
            continue
        conv = by_output.get(bts.inputs[0])
        if conv is None or conv.op not in _CONVS or not conv.inputs or len(readers.get(bts.inputs[0], [])) != 1:
            continue
        stb = by_output.get(conv.inputs[0])
        if stb is None or stb.op != "SPACE_TO_BATCH_ND" or len(stb.inputs) != 3 or \
                len(readers.get(conv.inputs[0], [])) != 1:
            continue
        consts = [_ints(model, graph, i) for i in (stb.inputs[1], stb.inputs[2], bts.inputs[1], bts.inputs[2])]
        if any(c is None for c in consts):
            continue
        block, pads, block_back, crops = consts
        if block != block_back or len(block) != 2 or len(pads) != 4 or len(crops) != 4:  # type: ignore[arg-type]
            continue
        opts = conv.options
        if opts.get("padding") != "VALID" or opts.get("stride_h", 1) != 1 or opts.get("stride_w", 1) != 1 or \
                opts.get("dilation_h_factor", 1) != 1 or opts.get("dilation_w_factor", 1) != 1:
            continue
        options = {**opts, "dilation_h_factor": block[0], "dilation_w_factor": block[1],  # type: ignore[index]
                   "atrous_pad": [pads[0:2], pads[2:4]], "atrous_crop": [crops[0:2], crops[2:4]]}  # type: ignore[index]
        replaced[conv.index] = dataclasses.replace(conv, inputs=(stb.inputs[0], *conv.inputs[1:]),
                                                   outputs=bts.outputs, options=options)
        dropped |= {stb.index, bts.index}
    return [replaced.get(op.index, op) for op in graph.operators if op.index not in dropped]


def _ints(model: LiteModel, graph: LiteSubgraph, index: int) -> list[int] | None:
    if index < 0:
        return None
    t = graph.tensors[index]
    if t.dtype not in ("int32", "int64") or not model.has_data(t):
        return None
    return [int(v) for v in model.array(t).reshape(-1)]
