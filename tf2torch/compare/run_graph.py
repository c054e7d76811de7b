"""The TensorFlow side for a frozen GraphDef (``.pb``): the graph imported into a session, the weights
its own Const nodes. Layers are found as for ``.meta`` graphs (``run_tf1``): each module's TF
counterpart is the first op that depends on all of its weights and on the input; inputs and outputs
are the tensors the conversion recorded (``report.json``: ``interface.tf_inputs`` / ``tf_outputs``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import FormatError, UnsupportedError
from .outdir import OutDir
from .reference import import_tf
from .run_tf1 import MetaGraphReference


class FrozenGraphReference(MetaGraphReference):
    kind = "graphdef"
    weight_ops = frozenset({"Const"})

    def __init__(self, path: Path, outdir: OutDir, tf_inputs: Sequence[str] = (),
                 tf_outputs: Sequence[str] = ()) -> None:
        tf = import_tf()
        self.tf1 = tf.compat.v1
        graph_def = self.tf1.GraphDef()
        try:
            graph_def.ParseFromString(path.read_bytes())
        except Exception as exc:  # protobuf's DecodeError: not a GraphDef
            raise FormatError(f"{path}: TensorFlow cannot parse this GraphDef ({type(exc).__name__})") from exc
        self.prefix, self.outdir, self.graph, self.saver = path, outdir, tf.Graph(), None
        with self.graph.as_default():
            try:
                tf.graph_util.import_graph_def(graph_def, name="")
            except (ValueError, KeyError, tf.errors.OpError) as exc:
                raise UnsupportedError(f"{path}: TensorFlow cannot import this graph ({exc})") from exc
        self._setup(outdir, tf_inputs, tf_outputs)

    def _restore(self, sess: Any) -> None:
        """Nothing to restore: a frozen graph's weights are in the graph."""
