"""Walk a Keras graph, call one converter per layer call, and build the generated classes.

Layers are visited in saved order and each call runs as soon as its inputs exist (shared layers and
nested models can be called later than they are listed, as in Keras's own deserialisation). Module
attributes and local variable names come from per-class namespaces; weights become state_dict keys
named after those attributes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..codegen import library, visit
from ..codegen import nodes as n
from ..codegen.blocks.nest import BLOCK_CLASS, local_name
from ..codegen.emit import ClassDef, module_node
from ..codegen.generated import Generated
from ..codegen.namespace import MODULE_ATTRIBUTES, Namespace, ScopedNamespace, class_name
from ..codegen.render import render
from ..codegen.selfcheck import check_param
from ..errors import Tf2TorchError, UnsupportedError
from ..interface import output_channels_first
from ..spec import GraphSpec, LayerSpec, TensorRef
from . import layouts_rt, masks
from .base import Ctx, TensorInfo
from .graph_inputs import first_consumer_wants, input_infos
from .registry import lookup

_SPLIT_AT = 88  # characters: longer op chains are split into one assignment per op

# A lowered graph's class_name -> what the generated class's docstring calls its source.
_SOURCES = {"TFGraph": "TF graph", "TFLite": "TFLite model"}


@dataclass(frozen=True)
class Value:
    expr: n.Expr  # the local holding the tensor
    info: TensorInfo


@dataclass
class Options:
    channels_last: bool = False  # interface in Keras layout instead of channels-first
    # --input-shape: batch first, in the generated model's layout (translated to Keras's where the input's
    # layout is decided, so the two cannot disagree)
    input_shape: tuple[int, ...] | None = None
    keras_version: int = 3
    keras_release: tuple[int, int] | None = None  # (major, minor) of the Keras that saved the file, if known
    scoped: bool = False  # module attributes nested by the layers' "/" scopes (TF graphs)
    blocks: bool = True  # repeated blocks of layers as one class per kind (codegen/blocks/)


@dataclass
class _LayerState:
    attrs: dict[str, str] = field(default_factory=dict)  # op suffix -> attribute
    ctors: dict[str, n.Expr] = field(default_factory=dict)  # op suffix -> constructor
    nested: tuple[str, list[TensorInfo], list[TensorInfo]] | None = None  # (attr, input infos, outputs)


class GraphConverter:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.class_names = Namespace()
        self.out = Generated()
        # (class prefix, Keras layer) -> the attribute of its main module or nested model in that class,
        # for an op that calls another layer's module (Op.shares)
        self._owned: dict[tuple[str, str], str] = {}

    def convert(self, graph: GraphSpec, original: GraphSpec | None = None) -> Generated:
        """``original``: the graph before its blocks were nested (the input layouts are read from it)."""
        infos = input_infos(graph, first_consumer_wants(original or graph), self.options.input_shape,
                            self.options.channels_last)
        outputs = self._graph_class(graph, "", infos, top=True)
        self.out.outputs = outputs
        return self.out

    # -- one class per (nested) graph ---------------------------------------------------------------

    def _graph_class(self, graph: GraphSpec, prefix: str, infos: list[TensorInfo], top: bool) -> list[TensorInfo]:
        attrs = ScopedNamespace(MODULE_ATTRIBUTES) if self.options.scoped else Namespace(MODULE_ATTRIBUTES)
        local = Namespace()
        block = graph.name if graph.class_name == BLOCK_CLASS else ""
        cls = ClassDef(name=self.class_names.create(class_name(graph.name), "Model"),
                       doc=f"{_SOURCES.get(graph.class_name, 'Keras model')} {graph.name!r}, "
                           "converted by tf2torch.", block=block)
        values: dict[tuple[str, int, int], Value] = {}
        for ref, info in zip(graph.inputs, infos, strict=True):
            name = local.create(ref.layer, "input")
            cls.inputs.append(name)
            values[(ref.layer, ref.node, ref.index)] = Value(n.Name(name), info)
            if top:
                self.out.inputs.append((name, info))
        pending = [(layer, i) for layer in graph.layers for i in range(len(layer.calls))
                   if layer.class_name != "InputLayer"]
        outer_readers = getattr(self, "_readers", {})  # a nested model's walk restores its parent's at the end
        outer_block, self._block = getattr(self, "_block", ""), block
        self._readers: dict[tuple[str, int, int], list[tuple[LayerSpec, int]]] = {}
        for layer, i in pending:
            for r in layer.calls[i].inputs:
                self._readers.setdefault(_key(r), []).append((layer, i))
        states: dict[str, _LayerState] = {}
        while pending:
            ready = [(layer, i) for layer, i in pending
                     if all(_key(r) in values for r in layer.calls[i].inputs)]
            if not ready:
                names = ", ".join(sorted({layer.name for layer, _ in pending})[:5])
                raise UnsupportedError(f"model {graph.name!r}: layers {names} are never reached from the inputs "
                                       "(disconnected graph or missing input)")
            layer, i = ready[0]
            pending.remove((layer, i))
            state = states.setdefault(layer.name, _LayerState())
            args = [values[_key(r)] for r in layer.calls[i].inputs]
            results = self._call(cls, attrs, local, layer, i, args, state, prefix)
            for j, value in enumerate(results):
                values[(layer.name, i, j)] = value
        out_infos = []
        for ref in graph.outputs:
            value = values.get(_key(ref))
            if value is None:
                raise UnsupportedError(f"model {graph.name!r}: output {ref.layer!r} is never computed")
            expr, info = value.expr, value.info
            if top:
                expr, info = self._interface(expr, info)
            cls.returns.append(expr)
            out_infos.append(info)
        self.out.classes.append(cls)
        self._readers, self._block = outer_readers, outer_block
        return out_infos

    def _interface(self, expr: n.Expr, info: TensorInfo) -> tuple[n.Expr, TensorInfo]:
        """A model output moved to the layout tf2torch.interface gives it."""
        cf = output_channels_first(info.rank, info.layout, self.options.channels_last)
        return layouts_rt.convert(expr, info, "cf" if cf else "keras")

    # -- one layer call -------------------------------------------------------------------------

    def _call(self, cls: ClassDef, attrs: Namespace | ScopedNamespace, local: Namespace, layer: LayerSpec, index: int,
              args: list[Value], state: _LayerState, prefix: str) -> list[Value]:
        if layer.calls[index].kwargs.get("training") is True:
            self._training_call(layer)
        if layer.graph is not None:
            return self._nested(cls, attrs, local, layer, args, state, prefix)
        reg = lookup(layer)
        exprs, infos = self._arrange(args, reg.wants, reg.accepts_flat)
        mask = masks.at_call(self._readers, layer, index, [a.info.mask for a in args], self.options.keras_version)
        if not mask and any(a.info.mask for a in args):  # the mask ends here (Keras 3 drops it, or a DROP layer)
            args = [dataclasses.replace(a, info=dataclasses.replace(a.info, mask="")) for a in args]
        infos = [dataclasses.replace(i, mask=a.info.mask) for i, a in zip(infos, args)]
        ctx = Ctx(layer, layer.calls[index], tuple(infos), self.options.keras_version, self.options.keras_release)
        conv = reg.fn(ctx)
        first_call = not state.attrs and not state.ctors
        own = local_name(layer, self._block) if self._block else layer.name  # in a block: its own name there
        x: n.Expr | None = exprs[0] if exprs else None
        last_module = ""
        for k, op in enumerate(conv.ops):
            holes: dict[str, n.Expr] = {str(j): e for j, e in enumerate(exprs)}
            if op.module is not None:
                ctor = module_node(op.module)
                if op.suffix not in state.attrs:
                    base = own if not op.suffix else f"{own}_{op.suffix}"
                    state.attrs[op.suffix] = attrs.create(base, "layer")
                    if not op.suffix:
                        self._owned[(prefix, layer.name)] = state.attrs[op.suffix]
                    state.ctors[op.suffix] = ctor
                    cls.modules.append((state.attrs[op.suffix], ctor))
                    if len(state.attrs) == 1:  # one comment per layer, above its first module
                        cls.comments[state.attrs[op.suffix]] = f"{layer.class_name} {own}"
                elif state.ctors[op.suffix] != ctor:
                    raise UnsupportedError(f"shared layer {layer.name!r} is called with inputs that need different "
                                           f"modules ({render(state.ctors[op.suffix])} vs {render(ctor)}); "
                                           "pass --input-shape")
                last_module = state.attrs[op.suffix]
                holes["m"] = n.Self(last_module)
            wanted = visit.holes(op.expr)
            if x is not None and wanted.count("x") > 1 and not isinstance(x, n.Name):
                tmp = local.create(own, "t")  # used twice (a tuple's items): evaluate once
                cls.lines.append(n.Assign((tmp,), x))
                x = n.Name(tmp)
            if x is not None:
                holes["x"] = x
            if op.shares:
                holes["s"] = self._shared(op.shares, prefix, layer)
            x = visit.fill(op.expr, holes)
            left = visit.holes(x)
            if left:
                raise UnsupportedError(f"layer {layer.name!r} ({layer.class_name}): its converter left "
                                       f"{{{left[0]}}} unfilled (a tf2torch bug; please report it)")
            if len(render(x)) > _SPLIT_AT and k < len(conv.ops) - 1:
                tmp = local.create(own, "t")
                cls.lines.append(n.Assign((tmp,), x))
                x = n.Name(tmp)
        if x is None:
            raise UnsupportedError(f"layer {layer.name!r} ({layer.class_name}): converted to no operation")
        names = [local.create(own if len(conv.outputs) == 1 else f"{own}_{j}", "t") for j in range(len(conv.outputs))]
        cls.lines.append(n.Assign(tuple(names), x))
        # Keras 2 computes masks implicitly (compute_mask). Keras 3 records a mask as ops and a mask= argument
        # for layers whose call takes `mask`, but layers that read their inputs' masks themselves
        # (MultiHeadAttention) leave no trace in the config: masks are tracked in both.
        made = masks.made_by(layer.class_name, layer.config, exprs[0]) if exprs else None
        if made is not None:  # this layer makes a mask: a local the layers after it read
            mask = local.create(f"{own}_mask", "mask")
            cls.lines.append(n.Assign((mask,), made))
        elif mask and not masks.carried(layer.class_name, layer.config):
            mask = ""
        if first_call:
            modules = {op.suffix: op.module for op in conv.ops if op.module is not None}
            for p in conv.params:
                key = f"{prefix}{state.attrs[p.suffix]}.{p.name}"
                try:
                    shape = p.layout.out_shape(p.var.shape) if p.var is not None else tuple(p.const.shape)  # type: ignore[union-attr]
                except Tf2TorchError:
                    shape = None  # a weight its layout cannot take: planning it names the variable
                if shape is not None:
                    check_param(modules.get(p.suffix), p.name, shape, key)  # the module must fit the weight
                self.out.params.append((key, p))
            self.out.notes += [f"{layer.name}: {note}" for note in conv.notes]
            self.out.sized = self.out.sized or conv.sized
            # with what they use (the runtime library computes it): their names are taken in the file too
            self.out.helpers = library.closure([*self.out.helpers, *conv.helpers])
            if last_module and conv.ops[-1].module is not None:
                self.out.taps.setdefault(layer.name, prefix + last_module)
                self.out.tap_layouts.setdefault(layer.name, layouts_rt.normalise(conv.outputs[0]).layout)
        return [Value(n.Name(name), dataclasses.replace(layouts_rt.normalise(i), mask=mask if j == 0 else ""))
                for j, (name, i) in enumerate(zip(names, conv.outputs, strict=True))]

    def _arrange(self, args: list[Value], wants: str, accepts_flat: bool) -> tuple[list[n.Expr], list[TensorInfo]]:
        exprs, infos = [], []
        target = wants
        if wants == "same" and args:
            target = "keras" if args[0].info.layout == "cf_flat" else args[0].info.layout
        for value in args:
            if target == "any" or (accepts_flat and value.info.layout == "cf_flat"):
                exprs.append(value.expr)
                infos.append(value.info)
                continue
            expr, info = layouts_rt.convert(value.expr, value.info, target)
            exprs.append(expr)
            infos.append(info)
        return exprs, infos

    def _nested(self, cls: ClassDef, attrs: Namespace | ScopedNamespace, local: Namespace, layer: LayerSpec,
                args: list[Value],
                state: _LayerState, prefix: str) -> list[Value]:
        # A mask is a local of the forward that makes it: the nested class could not read its caller's, nor its
        # caller the nested one's (Keras hands masks across: the generated code would raise NameError).
        if any(a.info.mask for a in args) or layer.graph is not None and len(args) != len(layer.graph.inputs):
            # (Keras 3 records a nested model's mask as mask= even with training=: Functional converts no inputs)
            raise UnsupportedError(f"nested model {layer.name!r} receives a Keras mask (from Embedding(mask_zero="
                                   "True) or Masking), which Keras hands on to its layers and tf2torch does not")
        if state.nested is None and layer.graph is not None:
            attr = attrs.create(layer.name, "block")
            if layer.class_name != BLOCK_CLASS:
                self._owned[(prefix, layer.name)] = attr
            infos = [a.info for a in args]
            outs = self._graph_class(layer.graph, f"{prefix}{attr}.", infos, top=False)
            cls.modules.append((attr, n.Call(n.Ref(self.out.classes[-1].name))))  # the class just generated
            state.nested = (attr, infos, outs)
            if layer.class_name == BLOCK_CLASS:  # not a Keras layer (verify has nothing to tap): see-through
                for (where, name), inner in list(self._owned.items()):
                    if where == f"{prefix}{attr}.":
                        self._owned[(prefix, name)] = f"{attr}.{inner}"
            else:
                self.out.taps.setdefault(layer.name, prefix + attr)
        assert state.nested is not None  # set just above on the first call
        attr, infos, outs = state.nested
        if any(o.mask for o in outs):
            raise UnsupportedError(f"nested model {layer.name!r} returns a tensor with a Keras mask made inside it "
                                   "(Embedding(mask_zero=True) or Masking), which tf2torch does not hand on")
        exprs = []
        for value, want in zip(args, infos, strict=True):
            expr, _ = layouts_rt.convert(value.expr, value.info, want.layout if want.layout != "cf_flat" else "keras")
            exprs.append(expr)
        names = [local.create(layer.name if len(outs) == 1 else f"{layer.name}_{j}", "t") for j in range(len(outs))]
        cls.lines.append(n.Assign(tuple(names), n.Call(n.Self(attr), tuple(exprs))))
        return [Value(n.Name(name), i) for name, i in zip(names, outs, strict=True)]

    def _training_call(self, layer: LayerSpec) -> None:
        """A call recorded as ``layer(x, training=True)``. tf_keras honours it in every run, predict included
        (dropout, noise, batch statistics stay on): refused. Keras 3's predict and call(training=False)
        override it with the model's own training=False, which the converted model computes: a note."""
        if self.options.keras_version == 2:
            raise UnsupportedError(
                f"layer {layer.name!r} ({layer.class_name}) is called with training=True: tf_keras computes its "
                "training behaviour there (dropout, batch statistics, augmentation) even in predict, which the "
                "converted model does not; save the model without training=True")
        self.out.notes.append(f"{layer.name}: recorded as called with training=True, which Keras 3's predict and "
                              "call(training=False) override, as the converted model does (a call without "
                              "training= would honour it)")

    def _shared(self, path: tuple[str, ...], prefix: str, layer: LayerSpec) -> n.Self:
        """``self.<attr>…`` of the module another layer owns, named by Keras layer names from this model down
        through nested ones: keras-hub's MaskedLMHead calls its backbone's token embedding (one Keras object,
        saved once, with the backbone), so the generated head calls that one module."""
        where = prefix
        for name in path:
            attr = self._owned.get((where, name))
            if attr is None:
                raise UnsupportedError(f"layer {layer.name!r} ({layer.class_name}) calls layer {'/'.join(path)!r}, "
                                       "which this model does not convert before it")
            where = f"{where}{attr}."
        return n.Self(where[len(prefix):-1])


def _key(ref: TensorRef) -> tuple[str, int, int]:
    return (ref.layer, ref.node, ref.index)
