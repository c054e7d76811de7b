"""Read-only value objects: what every reader hands to the rest of tf2torch.

Nothing past a reader sees h5py objects, zip members or protobuf bytes: only these classes. Tensor
data is lazy (``Variable.read()``), so listing a multi-GB checkpoint never touches its data files.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .dtypes import DType

if TYPE_CHECKING:
    import numpy as np


class Role(enum.StrEnum):
    """What a stored variable is for; only ``WEIGHT`` variables end up in a state_dict by default."""

    WEIGHT = "weight"
    OPTIMIZER = "optimizer"  # optimizer slots (Adam m/v, momentum) and optimizer state (iterations)
    EMA = "ema"  # ExponentialMovingAverage shadow variables
    BOOKKEEPING = "bookkeeping"  # global_step, save counters, object-graph blobs, ...


class Format(enum.StrEnum):
    TF1_CHECKPOINT = "tf1-checkpoint"  # tf.compat.v1.train.Saver (names are variable names)
    TF2_CHECKPOINT = "tf2-checkpoint"  # tf.train.Checkpoint (names are object-graph paths)
    SAVED_MODEL = "savedmodel"
    KERAS_H5 = "keras-h5"  # legacy model.save("x.h5") or save_weights("x.h5"), Keras 2 or 3
    KERAS_V3 = "keras-v3"  # Keras 3 .keras zip
    KERAS_WEIGHTS_H5 = "keras-weights-h5"  # Keras 3 model.save_weights("x.weights.h5")
    GRAPH_DEF = "graphdef"  # a frozen GraphDef .pb: the weights are Const nodes
    TFLITE = "tflite"  # a TFLite flatbuffer (.tflite): the weights are constant tensors


@dataclass(frozen=True, eq=False)
class Variable:
    """One stored tensor. ``read()`` loads it (memory-mapped where the format allows)."""

    name: str  # the key in the source: TF variable name, object-graph path, or h5 dataset path
    dtype: DType
    shape: tuple[int, ...]
    nbytes: int  # bytes as stored (for strings: the encoded size)
    loader: Callable[[], np.ndarray] = field(repr=False)
    role: Role = Role.WEIGHT
    tf_name: str = ""  # the variable's own TF name when the key differs (object graphs, h5 `:0` names)
    note: str = ""  # why it has its role, e.g. "Adam slot 'm' of dense/kernel"

    def read(self) -> np.ndarray:
        """The tensor as a numpy array (bfloat16 as raw uint16 bits; strings as an object array)."""
        return self.loader()


@dataclass(frozen=True)
class TensorRef:
    """The output ``index`` of call number ``node`` of layer ``layer`` (Keras's inbound triple)."""

    layer: str
    node: int = 0
    index: int = 0


@dataclass(frozen=True)
class LayerCall:
    """One call of a layer: its input tensors (nested structure flattened) and extra call kwargs."""

    inputs: tuple[TensorRef, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class LayerSpec:
    """A Keras layer: class, config (JSON as saved, read-only by convention), calls and weights."""

    name: str
    class_name: str
    config: Mapping[str, Any]
    calls: tuple[LayerCall, ...] = ()
    weights: tuple[Variable, ...] = ()  # in the order Keras saved them
    graph: GraphSpec | None = None  # set for nested models (a Functional or Sequential used as a layer)
    # files a .keras archive holds for this layer (assets/<its object path>/NAME), NAME -> bytes: an
    # adapted lookup layer's vocabulary.txt (readers/keras_assets.py)
    assets: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class GraphSpec:
    """A Keras model: its layers in saved order, and the tensors that are its inputs and outputs."""

    name: str
    class_name: str  # "Functional", "Sequential", "Model"
    layers: tuple[LayerSpec, ...]
    inputs: tuple[TensorRef, ...]
    outputs: tuple[TensorRef, ...]
    keras_version: int  # 2 or 3: the config dialect it was read from
    # (major, minor) of the Keras that saved the file, when it says: a few semantics changed within Keras 3
    keras_release: tuple[int, int] | None = None
    # A lowered TF graph (tfgraph/): the TF tensors of its inputs and outputs (for verify), and the
    # signature's output keys (SavedModels), in output order.
    tf_inputs: tuple[str, ...] = ()
    tf_outputs: tuple[str, ...] = ()
    output_names: tuple[str, ...] = ()

    def layer(self, name: str) -> LayerSpec:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)


@dataclass(frozen=True)
class OpSpec:
    """A conv / pool / batch-norm / MatMul op or an input placeholder of a TF1 graph (``.meta``), tied
    to the variables it reads. ``BatchNormalization`` stands for an unfused batch norm (its ``add``
    node: moving variance + epsilon)."""

    name: str
    op: str  # "Conv2D", "DepthwiseConv2dNative", "MaxPool", "AvgPool", "FusedBatchNormV3", ...
    padding: str = ""  # "SAME", "VALID", "EXPLICIT"
    strides: tuple[int, ...] = ()
    dilations: tuple[int, ...] = ()
    ksize: tuple[int, ...] = ()  # pooling window (4-D, in data_format order)
    data_format: str = "NHWC"
    epsilon: float | None = None
    variables: tuple[str, ...] = ()  # names of the variables the op reads, in input order
    # Data flow (pools, MatMul): the nearest conv / pool / BN / MatMul / Placeholder ops that feed
    # operand 0 through activations, adds and pads, in graph order.
    upstream: tuple[str, ...] = ()
    flatten_of: str = ""  # MatMul: the 4-D NHWC op (or input) whose output a Reshape flattens into it
    shape: tuple[int | None, ...] | None = None  # Placeholder: its shape (None: unknown rank)
    dtype: str = ""  # Placeholder: "float32", or "dtype N" for other DataType enum values


@dataclass(frozen=True)
class GraphNode:
    """One NodeDef of a TF graph, attributes decoded (``readers/graph/nodes.py`` says into what)."""

    name: str
    op: str
    inputs: tuple[str, ...]  # data inputs: "node" (output 0) or "node:1"; control inputs are dropped
    attrs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class FunctionSpec:
    """A FunctionDef of a graph's library. Inside ``nodes``, a function input is its bare arg name and a
    node's output is ``"node:output_arg:index"``; ``ret`` maps each output arg to such a reference."""

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    nodes: tuple[GraphNode, ...]
    ret: Mapping[str, str]


@dataclass(frozen=True)
class Signature:
    """A SavedModel signature: input / output keys -> tensor names of the outer graph ("x:0")."""

    name: str
    inputs: Mapping[str, str]
    outputs: Mapping[str, str]


OpOutputs = tuple[tuple[str, str, str], ...]  # an op's output args: (name, number_attr, type_list_attr)


@dataclass(frozen=True, eq=False)
class TFGraph:
    """A whole TF graph (a frozen ``.pb``, the graph of a ``.meta``, or a SavedModel's), nodes in file order."""

    where: str  # the file, for messages
    nodes: tuple[GraphNode, ...]
    # Variable node -> the checkpoint name its value is stored under (empty when frozen)
    variables: Mapping[str, str] = field(default_factory=dict)
    functions: Mapping[str, FunctionSpec] = field(default_factory=dict)  # the library, by name
    signatures: Mapping[str, Signature] = field(default_factory=dict)  # SavedModels
    op_outputs: Mapping[str, OpOutputs] = field(default_factory=dict)  # from the stripped OpDefs

    def by_name(self) -> dict[str, GraphNode]:
        return {n.name: n for n in self.nodes}  # a later node of one name replaces an earlier one, as in TF


@dataclass(frozen=True, eq=False)
class ModelSpec:
    """Everything read from one source: variables in file order, and architecture where present."""

    path: Path
    format: Format
    variables: tuple[Variable, ...]
    graph: GraphSpec | None = None
    ops: tuple[OpSpec, ...] = ()
    notes: tuple[str, ...] = ()
    # Checkpoint names in creation order (a TF1 graph's variable nodes), when the source records it;
    # a TF1 bundle's own order is sorted by name, which says nothing about the network.
    variable_order: tuple[str, ...] = ()
    # The file holds an architecture tf2torch cannot use (a subclassed or keras-hub model): why. A
    # conversion then refuses rather than silently writing a bare state_dict (--weights-only opts in).
    unconverted: str = ""
    # The TF graph behind the variables (a frozen .pb, or PREFIX.meta), decoded on demand: a BERT
    # .meta has thousands of nodes and only a generated-model conversion needs them.
    tf_graph: Callable[[], TFGraph] | None = field(default=None, repr=False)
    # False when the reader saw that ``tf_graph`` has no Placeholder node: no input can feed a model, so a
    # conversion writes the weights without decoding the graph (about 0.1 s per 1,000 nodes).
    graph_placeholders: bool = True
    # A TFLite model (readers/tflite: its subgraphs, tensors and operators), decoded when the file is read.
    tflite: Callable[[], Any] | None = field(default=None, repr=False)

    def __iter__(self) -> Iterator[Variable]:
        return iter(self.variables)

    def __len__(self) -> int:
        return len(self.variables)

    def __getitem__(self, name: str) -> Variable:
        for var in self.variables:
            if var.name == name:
                return var
        raise KeyError(name)

    def names(self) -> list[str]:
        return [v.name for v in self.variables]
