"""A TFLite model (``.tflite``) → layers → a generated model, like a TF graph.

``tflite.lower`` translates each TFLite operator into the TF op it came from (with TFLite's weight
layouts read through the layout table) and lowers it with the TF-graph converters; the lowered
``ModelSpec`` then goes through the Keras mode's ``generated``. Inputs and outputs follow
``tf2torch.interface``'s rule, as for TF graphs: NHWC images become channels-first unless --channels-last.
"""

from __future__ import annotations

from ..errors import UsageError
from ..options import ConvertOptions
from ..spec import ModelSpec
from . import Outcome, keras
from .tf_graph import sized


def _quantized(spec: ModelSpec) -> bool:
    """The model holds int8 weights or activations (what the integer emulation computes)."""
    from ..tflite.quant import ACTIVATION_INTS

    model = spec.tflite() if spec.tflite is not None else None
    return model is not None and any(t.dtype in ACTIVATION_INTS for t in model.subgraphs[0].tensors)


def run(spec: ModelSpec, options: ConvertOptions) -> Outcome:
    """The generated model of ``spec``'s TFLite model (with --dequantize of a quantized one, its distance
    from the integer emulation, measured on a probe, in the report: ``tflite_distance``)."""
    if options.weights_only:
        raise UsageError(f"{spec.path}: --weights-only is not available for .tflite models (their weights are in "
                         "TFLite's own layouts); convert the model, whose state_dict is model.safetensors")
    if options.model is not None:
        raise UsageError(f"{spec.path}: --model is not available for .tflite models yet; convert without it and "
                         "load model.safetensors into your module")
    if options.graph_outputs or options.signature is not None:
        raise UsageError(f"{spec.path}: --graph-output / --signature apply to TF graphs; a .tflite model is "
                         "converted whole, its first subgraph")
    if options.dtype not in (None, "float32") and not options.dequantize and _quantized(spec):
        raise UsageError(f"{spec.path}: --dtype {options.dtype} would change the float32 scales and tables of "
                         "the integer emulation LiteRT's arithmetic needs; convert with --dequantize --dtype "
                         f"{options.dtype} for a float model in {options.dtype}")
    outcome = _generated(spec, options)
    if options.dequantize and _quantized(spec):
        from .tflite_distance import distance_note

        outcome.report.notes.append(distance_note(outcome, lambda o: _generated(spec, o), options,
                                                  outcome.report.interface))
    return outcome


def _generated(spec: ModelSpec, options: ConvertOptions) -> Outcome:
    from ..tflite.lower import lower

    lowered = sized(lambda tf_shape: lower(spec, tf_shape, options.dequantize), options)
    assert lowered is not None  # lower() always returns a model or raises
    # what the lowering adds to the notes (a quantized model's input / output scales, --dequantize) goes
    # into model.py's docstring too
    added = tuple(n for n in lowered.notes if n not in spec.notes)
    outcome = keras.generated(lowered, options, input_shape=options.input_shape, doc_notes=added)
    outcome.report.notes[:0] = list(spec.notes)  # the reader's (the file's metadata entries), as docs/tflite.md says
    _quantization(spec, outcome.report.interface, options.dequantize)
    return outcome


def _quantization(spec: ModelSpec, interface: dict, dequantize: bool) -> None:
    """report.json's interface: each quantized input / output with its dtype, scale and zero point, and
    what the converted model takes or returns for it (the integers, or with --dequantize the real values)."""
    from ..tflite.quant import ACTIVATION_INTS

    graph = spec.tflite().subgraphs[0]  # type: ignore[misc]
    for kind, indices in (("inputs", graph.inputs), ("outputs", graph.outputs)):
        for entry, i in zip(interface.get(kind) or [], indices):  # both in the model's order
            q = graph.tensors[i].quantization
            if graph.tensors[i].dtype in ACTIVATION_INTS and len(q.scales) == 1:
                entry["quantization"] = {"dtype": graph.tensors[i].dtype, "scale": float(q.scales[0]),
                                         "zero_point": int(q.zero_points[0] if q.zero_points else 0),
                                         "values": "real" if dequantize else "quantized"}
