"""The ``keras.layers`` classes tf2torch does not convert, each with the reason and what to do instead.

``tf2torch layers --refused`` lists them, and a layer of one of these classes is refused with its reason
(``registry.lookup``); any other class with no converter is refused as unknown. The test suite checks
that every ``keras.layers`` class is either converted or listed here.
"""

from __future__ import annotations

_CODE = ("it holds Python code, which tf2torch never runs",
         "replace it with a built-in layer before saving, or port that part by hand")
_DATA = ("it encodes raw input data (strings, string vocabularies, hashes) before the network",
         "keep it in your input pipeline and convert the model from its first numeric layer")
_FOREIGN = ("it wraps another framework's function or module, whose code tf2torch never runs",
            "port that part by hand")
_NOT_YET = "port that part by hand, or keep it outside the model"

# class -> (why it is refused, what to do)
REFUSED: dict[str, tuple[str, str]] = {
    "Lambda": _CODE,
    "SlicingOpLambda": _CODE,
    "TFSMLayer": ("it calls a SavedModel's signature", "convert that SavedModel itself (tf2torch convert DIR)"),
    "JaxLayer": _FOREIGN,
    "FlaxLayer": _FOREIGN,
    "TorchModuleWrapper": _FOREIGN,
    "TextVectorization": _DATA,
    "StringLookup": _DATA,
    "Hashing": _DATA,
    "HashedCrossing": _DATA,
    "Pipeline": ("a preprocessing pipeline (keras.layers.Pipeline) is not converted", _NOT_YET),
    "MaxNumBoundingBoxes": ("a bounding-box preprocessing layer is not converted", _NOT_YET),
    # Keras 3.15 builds the model on the cropped size, but under training=False passes the image through
    # unchanged (a plain call crops at random): no one inference result to match
    "RandomCrop": ("Keras 3 builds the model on the cropped size but passes images through uncropped at "
                   "inference (tf_keras center-crops): no single result to match",
                   "crop with CenterCrop (converted) or outside the model"),
    # value-dependent image operations Keras also applies at inference
    "Equalization": ("its per-image histogram equalization is not converted yet", _NOT_YET),
    "ContrastLimitedAdaptiveHistogramEqualization": ("its per-image histogram equalization is not converted yet",
                                                     _NOT_YET),
    "MelSpectrogram": ("its audio front end (STFT and mel filter bank) is not converted yet", _NOT_YET),
    "STFTSpectrogram": ("its audio front end (STFT) is not converted yet", _NOT_YET),
    # cells are run by an RNN layer, never called in a model's graph themselves
    "LSTMCell": ("a cell is converted inside the RNN layer that runs it", "save the RNN layer, not the cell"),
    "GRUCell": ("a cell is converted inside the RNN layer that runs it", "save the RNN layer, not the cell"),
    "SimpleRNNCell": ("a cell is converted inside the RNN layer that runs it", "save the RNN layer, not the cell"),
    "StackedRNNCells": ("cells are converted inside the RNN layer that runs them", "save the RNN layer"),
    # base classes: a file naming one holds a custom subclass saved under it
    "Layer": ("a custom layer (the base class)", "register and port the layer by hand, or use --weights-only"),
    "Wrapper": ("a custom wrapper (the base class)", "register and port the layer by hand, or use --weights-only"),
}


def reason(class_name: str) -> tuple[str, str] | None:
    return REFUSED.get(class_name)
