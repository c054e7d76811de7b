"""One forward pass of the user's model, watched: which modules run, in which order, on what shapes.

It answers what names alone cannot: whether a module whose weights are missing is used at all (seed
000's ``sub_block1`` never runs), and where the pools (they own no weights) sit among the modules
that do own weights, so they can be tied to the pools of the TF graph. The model runs on zeros of
``--input-shape`` or of a shape the source states, in ``eval()`` and ``no_grad`` (no copy: a
multi-GB port would double its memory), and any failure is a reason, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Trace:
    """What one forward pass did. ``order``: module paths by their first call (the root excluded)."""

    input_shape: tuple[int, ...]
    order: list[str] = field(default_factory=list)
    in_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    out_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    captured: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # path -> (first input, output)

    def ran(self, path: str) -> bool:
        return path in self.in_shapes


def _shape(value: Any) -> tuple[int, ...] | None:
    shape = getattr(value, "shape", None)
    return tuple(int(s) for s in shape) if shape is not None else None


def run_traced(model: Any, input_shape: tuple[int, ...], capture: frozenset[str] = frozenset(),
               seed: int | None = None) -> Trace | str:
    """Run ``model`` once on ``input_shape``; a ``Trace``, or a one-line reason it could not run.

    ``capture`` names modules whose first input and output tensors are kept (for layout checks);
    ``seed`` runs on seeded normal noise instead of zeros, so kept values tell positions apart.
    """
    import torch

    trace = Trace(tuple(input_shape))
    handles = []

    def hook(path: str):
        def record(_module: Any, args: tuple, output: Any) -> None:
            if path in trace.in_shapes:
                return  # a module called twice (shared weights) is placed at its first call
            trace.order.append(path)
            trace.in_shapes[path] = (_shape(args[0]) if args else None) or ()
            trace.out_shapes[path] = _shape(output) or ()
            if path in capture and args:
                trace.captured[path] = (args[0].detach().clone(), output.detach().clone())
        return record

    for path, module in model.named_modules():
        if path:
            handles.append(module.register_forward_hook(hook(path)))
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    x = torch.randn(input_shape, generator=generator) if generator is not None else torch.zeros(input_shape)
    try:
        with torch.no_grad():
            model.eval()(x)
    except Exception as exc:  # the user's code: any exception is a reason to report, not a crash
        what = "zeros" if seed is None else "seeded noise"
        return f"running it on {what} of shape {list(input_shape)} raised {type(exc).__name__}: {exc}"
    finally:
        for handle in handles:
            handle.remove()
    return trace


def probe_shape(spec, input_shape: tuple[int, ...] | None) -> tuple[tuple[int, ...] | None, str]:
    """The shape to run the user's model on once: --input-shape, else the source's one image input
    (a TF1 float placeholder or Keras input of rank 4 with known sizes, NHWC -> NCHW)."""
    if input_shape is not None:
        return input_shape, "--input-shape"
    found = [op.shape for op in spec.ops if op.op == "Placeholder" and op.dtype == "float32"
             and op.shape is not None and len(op.shape) == 4 and None not in op.shape[1:]]
    graph = spec.graph
    if not found and graph is not None and len(graph.inputs) == 1:
        from .sources import keras_layers

        layer = next((la for la in keras_layers(graph) if la.name == graph.inputs[0].layer), None)
        shape = (layer.config.get("batch_shape") or layer.config.get("batch_input_shape")) if layer else None
        if isinstance(shape, list) and len(shape) == 4 and all(isinstance(v, int) for v in shape[1:]):
            found = [tuple(shape)]
    if len(found) != 1:
        return None, "the source states no single image input shape (pass --input-shape)"
    _, h, w, c = found[0]
    return (1, c, h, w), "the source's input"
