"""The TensorFlow side for TF1 checkpoints: the ``.meta`` graph, restored from the checkpoint, in a session.

Input and output: ``--tf-input`` / ``--tf-output``, or found: the one float ``Placeholder`` the output
depends on, and an op named ``logits`` / ``output`` / ``predictions`` / ... (last name component).
Boolean placeholders the output depends on (``is_training``) are fed ``False``.

Layers: the conversion report maps each source variable to a state_dict key, so to the key's module.
The module's TF counterpart is the *first op that depends on every one of its variables and on the
input*: for a conv without bias that is the ``Conv2D``; for a conv or Dense with a bias it is the
``BiasAdd`` / ``Add`` that follows (the conv op's own output excludes the bias); for a batch norm the
``FusedBatchNorm`` (or, unfused, the final ``add`` of ``x * scale + (beta - mean * scale)``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FormatError, UnsupportedError, UsageError
from .inputs import AUTO, InputSpec
from .outdir import EMA_SUFFIX, OutDir
from .reference import Probe, TFRun, import_tf

OUTPUT_NAMES = ("logits", "output", "outputs", "predictions", "prediction", "probabilities", "probs",
                "softmax", "y_pred", "pre_softmax")
VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp"})
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
REACH = 12  # ops from a variable to where its module's output is formed (unfused batch norm: ~5)


class MetaGraphReference:
    kind = "tf1-graph"
    weight_ops = VARIABLE_OPS  # the ops a report's source variables are

    def __init__(self, prefix: Path, outdir: OutDir, tf_inputs: Sequence[str] = (),
                 tf_outputs: Sequence[str] = ()) -> None:
        tf = import_tf()
        self.tf1 = tf.compat.v1
        meta = prefix.with_name(prefix.name + ".meta")
        if not meta.is_file():
            raise UsageError(f"{prefix}: verify runs the TF graph, but there is no {meta.name} next to the "
                             "checkpoint; verify a Keras file or a SavedModel of the same model instead")
        self.prefix, self.outdir, self.graph = prefix, outdir, tf.Graph()
        with self.graph.as_default():
            try:
                self.saver = self.tf1.train.import_meta_graph(str(meta), clear_devices=True)
            except (ValueError, KeyError, tf.errors.OpError) as exc:
                raise UnsupportedError(f"{meta}: TensorFlow cannot import this graph ({exc})") from exc
        self._setup(outdir, tf_inputs, tf_outputs)

    def _setup(self, outdir: OutDir, tf_inputs: Sequence[str], tf_outputs: Sequence[str]) -> None:
        # A generated model converted from this graph says which tensors its inputs and outputs are.
        converted_in, converted_out = outdir.interface.get("tf_inputs") or [], outdir.interface.get("tf_outputs") or []
        tf_outputs = tuple(tf_outputs) or tuple(str(t) for t in converted_out)
        tf_inputs = tuple(tf_inputs) or (tuple(str(t) for t in converted_in) if converted_out else ())
        self.outputs = [self._tensor(n, "--tf-output") for n in tf_outputs] or [self._find_output()]
        self.ancestors = _ancestors(t.op for t in self.outputs)
        self.inputs = [self._tensor(n, "--tf-input") for n in tf_inputs] or self._find_inputs()
        self.feeds = self._other_placeholders()
        self.probes, self.fetch = self._probes()
        self.notes = []
        if not tf_inputs or not tf_outputs:
            self.notes.append(f"TF graph input {', '.join(t.name for t in self.inputs)}, output "
                              f"{', '.join(t.name for t in self.outputs)} (--tf-input / --tf-output choose others)")
        self.notes += [f"placeholder {t.name} fed False (inference)" for t in self.feeds]

    # -- tensors ----------------------------------------------------------------------------------

    def _tensor(self, name: str, option: str) -> Any:
        try:
            return self.graph.get_tensor_by_name(name if ":" in name else f"{name}:0")
        except (KeyError, ValueError):
            raise UsageError(f"{option} {name!r}: no such tensor in the graph (give an op name like 'input' "
                             "or a tensor name like 'input:0')") from None

    def _find_output(self) -> Any:
        ops = self.graph.get_operations()
        found = [op for op in ops if op.name.rsplit("/", 1)[-1].lower() in OUTPUT_NAMES and op.outputs
                 and op.outputs[0].dtype.name in FLOAT_DTYPES and "gradients" not in op.name.split("/")]
        if found:
            depth = min(op.name.count("/") for op in found)
            found = [op for op in found if op.name.count("/") == depth]
        if len(found) != 1:
            what = "several ops" if found else "no op"
            names = found or [op for op in ops if op.outputs and op.type not in ("Const", "NoOp")][-5:]
            raise UsageError(f"{what} named like an output ({'/'.join(OUTPUT_NAMES[:3])}/...) in the graph; pass "
                             f"--tf-output NAME (e.g. {', '.join(repr(op.name) for op in names)})")
        return found[0].outputs[0]

    def _find_inputs(self) -> list[Any]:
        found = [op for op in self.graph.get_operations() if op.type == "Placeholder" and op.name in self.ancestors
                 and op.outputs[0].dtype.name in FLOAT_DTYPES]
        if len(found) != 1:
            names = ", ".join(repr(op.name) for op in found) or "none"
            raise UsageError(f"expected one float Placeholder feeding {self.outputs[0].name!r}, found {names}; "
                             "pass --tf-input NAME (once per input, in the PyTorch forward's order)")
        return [found[0].outputs[0]]

    def _other_placeholders(self) -> dict[Any, Any]:
        feeds = {}
        inputs = {t.op.name for t in self.inputs}
        for op in self.graph.get_operations():
            if op.type != "Placeholder" or op.name in inputs or op.name not in self.ancestors:
                continue
            if op.outputs[0].dtype.name != "bool":
                raise UsageError(f"placeholder {op.name!r} ({op.outputs[0].dtype.name}) also feeds the output; "
                                 "pass every input with --tf-input")
            feeds[op.outputs[0]] = False  # is_training: inference
        return feeds

    def input_specs(self) -> list[InputSpec]:
        specs = []
        for t in self.inputs:
            if t.shape.rank is None:
                raise UsageError(f"input {t.name!r} has no static rank in the graph; verify needs --inputs FILE.npy")
            specs.append(InputSpec(name=t.op.name, tf_shape=tuple(t.shape.as_list()), layout=AUTO,
                                   dtype=t.dtype.as_numpy_dtype.__name__, aliases=(t.name,)))
        return specs

    # -- layers -----------------------------------------------------------------------------------

    def _probes(self) -> tuple[list[Probe], list[Any]]:
        ops = self.graph.get_operations()
        order = {op.name: i for i, op in enumerate(ops)}
        variables = {op.name: op for op in ops if op.type in self.weight_ops}
        data = _descendants((t.op for t in self.inputs), self.ancestors)
        by_module: dict[str, list[Any]] = {}
        for source, key in self.outdir.key_of.items():
            op = variables.get(source.removesuffix(EMA_SUFFIX))  # an EMA shadow stands in for its variable
            if op is not None:
                by_module.setdefault(key.rpartition(".")[0], []).append(op)
        found = []
        for module, var_ops in by_module.items():
            reached = [_descendants([v], self.ancestors, REACH) for v in var_ops]
            common = set.intersection(*reached) & data
            if common:
                target = self.graph.get_operation_by_name(min(common, key=order.__getitem__))
                prefer = _prefer(target, [self.graph.get_operation_by_name(n) for n in set().union(*reached)])
                found.append((order[target.name], Probe(module, target.outputs[0].name, module, prefer)))
        found.sort(key=lambda item: item[0])
        probes = [p for _, p in found]
        return probes, [self.graph.get_tensor_by_name(p.tf) for p in probes]

    # -- run --------------------------------------------------------------------------------------

    def run(self, inputs: Sequence[np.ndarray]) -> TFRun:
        feed = dict(self.feeds)
        feed.update({t: x for t, x in zip(self.inputs, inputs)})
        with self.tf1.Session(graph=self.graph) as sess:
            self._restore(sess)
            try:
                values = sess.run(self.outputs + self.fetch, feed_dict=feed)
            except Exception as exc:
                raise UnsupportedError(f"TensorFlow failed to run the graph: {type(exc).__name__}: "
                                       f"{str(exc).splitlines()[0]}") from exc
        n = len(self.outputs)
        return TFRun(outputs=[np.asarray(v) for v in values[:n]], output_names=[t.name for t in self.outputs],
                     layers={p.name: np.asarray(v) for p, v in zip(self.probes, values[n:])})

    def _restore(self, sess: Any) -> None:
        try:
            if self.saver is not None:
                self.saver.restore(sess, str(self.prefix))
            shadows = self.outdir.ema_sources()  # converted with --ema: TF must run the shadows too
            if shadows:
                with self.graph.as_default():
                    by_name = {v.op.name: v for v in self.tf1.global_variables()}
                    var_list = {shadow: by_name[name] for name, shadow in shadows.items() if name in by_name}
                    self.tf1.train.Saver(var_list=var_list).restore(sess, str(self.prefix))
        except Exception as exc:
            raise FormatError(f"{self.prefix}: restoring the checkpoint into its .meta graph failed "
                              f"({type(exc).__name__}: {str(exc).splitlines()[0]})") from exc


def _prefer(target: Any, reached: list[Any]) -> str:
    """NHWC ops: PyTorch keeps the module's output channels-first; NCHW ops: both use the same axes."""
    for op in [target] + sorted(reached, key=lambda o: o.name):
        fmt = op.node_def.attr["data_format"].s.decode() if "data_format" in op.node_def.attr else ""
        if fmt:
            return "keras" if fmt.startswith("NC") else "cf"
    return "cf"


def _ancestors(ops: Iterable[Any]) -> set[str]:
    seen: set[str] = set()
    stack = list(ops)
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        stack.extend(t.op for t in op.inputs)
    return seen


def _descendants(ops: Iterable[Any], within: set[str], depth: int | None = None) -> set[str]:
    """Ops reachable from ``ops`` (excluded) through data edges, inside ``within``, up to ``depth`` steps."""
    seen: set[str] = set()
    queue = deque((op, 0) for op in ops)
    while queue:
        op, d = queue.popleft()
        if depth is not None and d >= depth:
            continue
        for out in op.outputs:
            for consumer in out.consumers():
                if consumer.name in within and consumer.name not in seen:
                    seen.add(consumer.name)
                    queue.append((consumer, d + 1))
    return seen
