"""One call of a Keras layer (an ``inbound_nodes`` entry) as a ``LayerCall``, in both config dialects.

* Keras 2 (tf_keras, and every legacy ``.h5`` it wrote): one list per call, holding one
  ``[layer, node, tensor, {kwargs}]`` leaf per input tensor (nested for some layers);
* Keras 3: ``{"args": [...], "kwargs": {...}}`` per call, with tensors written as
  ``{"class_name": "__keras_tensor__", "config": {"keras_history": [layer, node, tensor]}}``.

Both count nodes differently (see ``offset``); every ``TensorRef.node`` we hand out is an index into
the referenced layer's ``LayerSpec.calls`` (InputLayers have no calls: their tensor is node 0).
``LayerCall.inputs`` holds the tensors of the positional arguments, then those of the keyword
arguments (dict keys sorted, like Keras's ``tree.flatten``); tensors inside ``kwargs`` are also
replaced by ``TensorRef``. When positional arguments hold constants, they are kept, with tensors as
``TensorRef``, under ``kwargs[ARGS_KWARG]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import FormatError
from ..spec import LayerCall, TensorRef

ARGS_KWARG = "__args__"  # positional arguments of a call that contain constants (see module doc)
KERAS_TENSOR = "__keras_tensor__"  # Keras 3 class_name of a serialized symbolic tensor
CONSTANT_VALUE = "_CONSTANT_VALUE"  # Keras 2 leaf [_CONSTANT_VALUE, -1, value, kwargs]


class CallParser:
    """Call parsing for ``keras_config._Parser`` (which provides ``version``, ``where``, ``fail``)."""

    version: int
    where: str

    def fail(self, path: tuple[str, ...], what: str) -> FormatError:
        raise NotImplementedError

    def offset(self, entry: Mapping[str, Any], io: bool) -> int:  # node numbering of nested models
        raise NotImplementedError

    def call(self, node: Any, owner: str, by_name: Mapping[str, Any], path: tuple[str, ...]) -> LayerCall:
        where = f"call of layer '{owner}'"
        if isinstance(node, Mapping):  # Keras 3: {"args": [...], "kwargs": {...}}
            args, kwargs = node.get("args", []), node.get("kwargs", {})
            if not isinstance(args, list) or not isinstance(kwargs, Mapping):
                raise self.fail(
                    path, f"{where}: expected 'args' list and 'kwargs' dict, found {str(node)[:80]!r}"
                )
            args_t = self.v3_tensors(args, by_name, path, where)
            # Converted key by key: the kwargs dict itself may look like a serialized tensor.
            kwargs_t = {k: self.v3_tensors(v, by_name, path, where) for k, v in kwargs.items()}
        elif isinstance(node, list):  # Keras 2: [[layer, node, tensor, {kwargs}], ...]
            leaves = _v2_leaves(node)
            if not leaves:
                raise self.fail(path, f"{where}: empty inbound node")
            structure = self.v2_structure(node, by_name, path, where)
            # A one-leaf list is passed unwrapped (tf_keras ``unnest_if_single_tensor``); layers
            # that keep their input structure (TFOpLambda) save a lone tensor as a bare leaf.
            single = isinstance(structure, list) and len(structure) == 1 and not _is_v2_leaf(node)
            args_t = [structure[0] if single else structure]
            raw_kwargs = next(
                (leaf[3] for leaf in leaves if len(leaf) == 4 and isinstance(leaf[3], Mapping)), {}
            )
            kwargs_t = self.v2_kwargs(dict(raw_kwargs), by_name, path, where)
        else:
            raise self.fail(
                path, f"{where}: expected a list or dict inbound node, found {type(node).__name__}"
            )
        inputs = tuple(_refs(args_t)) + tuple(_refs([kwargs_t[k] for k in sorted(kwargs_t)]))
        if not inputs:  # a graph node exists only because a symbolic tensor went in
            raise self.fail(path, f"{where}: passes no tensor (only constants); the config is inconsistent")
        if _has_constant(args_t):
            kwargs_t[ARGS_KWARG] = args_t
        return LayerCall(inputs, kwargs_t)

    def v3_tensors(self, value: Any, by_name: Mapping[str, Any], path: tuple[str, ...], where: str) -> Any:
        if isinstance(value, Mapping):
            # "config" of a tensor / tuple is a dict in any file Keras wrote; other types read as {}
            # (then the reference or the tuple's items are reported as missing, never crash).
            config = value.get("config") if isinstance(value.get("config"), Mapping) else {}
            if value.get("class_name") == KERAS_TENSOR:
                return self.ref(config.get("keras_history"), by_name, path, where, io=False)
            if value.get("class_name") == "__tuple__":  # Keras 3 serializes tuples as {"__tuple__"}
                items = config.get("value", [])
                if not isinstance(items, list):
                    raise self.fail(path, f"{where}: expected a list of tuple items, found {str(items)[:80]!r}")
                return [self.v3_tensors(v, by_name, path, where) for v in items]
            return {k: self.v3_tensors(v, by_name, path, where) for k, v in value.items()}
        if isinstance(value, list):
            return [self.v3_tensors(v, by_name, path, where) for v in value]
        return value

    def v2_structure(self, node: Any, by_name: Mapping[str, Any], path: tuple[str, ...], where: str) -> Any:
        if _is_v2_leaf(node):
            if node[0] == CONSTANT_VALUE:
                return node[2]  # [_CONSTANT_VALUE, -1, value, kwargs]: a constant positional input
            return self.ref(node[:3], by_name, path, where, io=False)
        if isinstance(node, Mapping):  # layers that keep a dict input structure
            return {k: self.v2_structure(v, by_name, path, where) for k, v in node.items()}
        if isinstance(node, list):
            return [self.v2_structure(v, by_name, path, where) for v in node]
        raise self.fail(path, f"{where}: unexpected inbound node item {node!r}")

    def v2_kwargs(self, value: Any, by_name: Mapping[str, Any], path: tuple[str, ...], where: str) -> Any:
        # Like tf_keras, a [name, node, tensor] list inside kwargs naming a layer is a tensor.
        if isinstance(value, list) and len(value) == 3 and isinstance(value[0], str) and value[0] in by_name:
            return self.ref(value, by_name, path, where, io=False)
        if isinstance(value, Mapping):
            return {k: self.v2_kwargs(v, by_name, path, where) for k, v in value.items()}
        if isinstance(value, list):
            return [self.v2_kwargs(v, by_name, path, where) for v in value]
        return value

    def ref(
        self, triple: Any, by_name: Mapping[str, Any], path: tuple[str, ...], where: str, io: bool
    ) -> TensorRef:
        ok = isinstance(triple, list) and len(triple) >= 3 and isinstance(triple[0], str)
        if not ok or not all(isinstance(i, int) and not isinstance(i, bool) for i in triple[1:3]):
            raise self.fail(
                path, f"{where}: expected a tensor reference [layer, node, tensor], found {triple!r}"
            )
        name, node, index = triple[0], triple[1], triple[2]
        entry = by_name.get(name)
        if entry is None:
            raise self.fail(path, f"{where}: refers to layer '{name}', which is not in the model")
        return TensorRef(name, node - self.offset(entry, io), index)


def _is_v2_leaf(item: Any) -> bool:
    # A leaf starts with a layer name; a list of leaves starts with a list (or dict).
    return isinstance(item, list) and len(item) in (3, 4) and isinstance(item[0], str)


def _v2_leaves(node: Any) -> list[list[Any]]:
    if _is_v2_leaf(node):
        return [node]
    values = node.values() if isinstance(node, Mapping) else node if isinstance(node, list) else []
    return [leaf for v in values for leaf in _v2_leaves(v)]


def _refs(value: Any) -> list[TensorRef]:
    """Tensor references in ``value`` in Keras's flatten order (dict keys sorted)."""
    if isinstance(value, TensorRef):
        return [value]
    if isinstance(value, Mapping):
        return [r for k in sorted(value) for r in _refs(value[k])]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def _has_constant(value: Any) -> bool:
    if isinstance(value, TensorRef):
        return False
    if isinstance(value, Mapping):
        return any(_has_constant(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_constant(v) for v in value)
    return True
