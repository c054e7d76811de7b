"""TF2 object-based checkpoints: the ``TrackableObjectGraph`` stored under ``_CHECKPOINTABLE_OBJECT_GRAPH``.

tensorflow/core/protobuf/trackable_object_graph.proto: ``nodes`` (1), each with ``children`` (1:
node_id, local_name), ``attributes`` (2: name, full_name, checkpoint_key) and ``slot_variables`` (3:
original_variable_node_id, slot_name, slot_variable_node_id). Node 0 is the root.

Naming (decided here, used by ``Variable.name``): a variable is named by its *object path*, the local
names from the root joined by ``/`` and escaped as TF escapes them (``.`` -> ``..``, ``/`` -> ``.S``;
tensorflow/python/trackable/trackable_utils.py). TF's checkpoint key is the first breadth-first path
plus ``/.ATTRIBUTES/VARIABLE_VALUE``; we take the first breadth-first path *that avoids optimizer
objects*, because Keras 3 optimizers track the model's weights too (``optimizer/_trainable_variables/0``
is shorter than ``model/_operations/1/_kernel`` and wins the key). Objects reachable only through an
optimizer (slots, iterations) and legacy slot variables (reachable only through ``slot_variables``)
are named by their checkpoint key minus ``/.ATTRIBUTES/VARIABLE_VALUE``. Attributes other than
``VARIABLE_VALUE`` keep ``/.ATTRIBUTES/<name>``. The raw key stays in ``Attribute.checkpoint_key``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ..errors import FormatError
from ..spec import Role
from .proto import Message
from .roles import classify_tf1

GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
# Children that mark an object as an optimizer: OptimizerV2 hyperparameters ("iter"), the
# tf_keras >= 2.11 / Keras 3 optimizers ("_iterations"), or the conventional edge name.
_OPTIMIZER_MARKERS = ("iter", "_iterations")
_OPTIMIZER_EDGES = ("optimizer", "inner_optimizer")


@dataclass(frozen=True)
class Attribute:
    name: str  # "VARIABLE_VALUE" for variables
    full_name: str  # the TF variable name, e.g. "dense/kernel"
    checkpoint_key: str  # the bundle key


@dataclass(frozen=True)
class Slot:
    original: int  # node id of the variable the slot belongs to
    name: str  # "m", "v", "momentum", ...
    slot: int  # node id of the slot variable


@dataclass(frozen=True)
class Node:
    id: int
    children: tuple[tuple[str, int], ...]  # (local name, node id), in saved order
    attributes: tuple[Attribute, ...]
    slots: tuple[Slot, ...]


@dataclass(frozen=True)
class VariableInfo:
    """How one checkpoint key is presented: ``name`` (object path), role and the why."""

    key: str
    name: str
    node: int
    role: Role
    note: str
    tf_name: str


def escape(local_name: str) -> str:
    return local_name.replace(".", "..").replace("/", ".S")


@dataclass(frozen=True)
class ObjectGraph:
    """The decoded graph: plain values only, for readers and for the Keras code generator."""

    nodes: tuple[Node, ...]

    @classmethod
    def decode(cls, blob: bytes, where: str) -> ObjectGraph:
        nodes = []
        for i, msg in enumerate(Message(blob, where).messages(1, "nodes")):
            children = tuple((c.string(2), c.int64(1)) for c in msg.messages(1, "children"))
            attributes = tuple(Attribute(a.string(1), a.string(2), a.string(3)) for a in msg.messages(2, "attributes"))
            slots = tuple(Slot(s.int64(1), s.string(2), s.int64(3)) for s in msg.messages(3, "slot_variables"))
            nodes.append(Node(i, children, attributes, slots))
        count = len(nodes)
        if not count:  # node 0 is the root every path starts from
            raise FormatError(f"{where}: the object graph has no nodes, expected at least the root "
                              "(corrupt object graph); re-save the checkpoint")
        for node in nodes:  # dangling ids would otherwise surface later as IndexErrors
            ids = [c for _, c in node.children] + [i for s in node.slots for i in (s.original, s.slot)]
            if any(not 0 <= i < count for i in ids):
                raise FormatError(f"{where}: node {node.id} refers to a node outside 0..{count - 1} "
                                  "(corrupt object graph); re-save the checkpoint")
        return cls(tuple(nodes))

    def child(self, node: int, local_name: str) -> int | None:
        return next((c for name, c in self.nodes[node].children if name == local_name), None)

    def resolve(self, path: str, start: int = 0) -> int | None:
        """The node at an (escaped) object path like ``model/_operations/1``, or None."""
        node: int | None = start
        for part in filter(None, path.split("/")):
            node = None if node is None else next(
                (c for name, c in self.nodes[node].children if escape(name) == part), None)
        return node

    def optimizers(self) -> frozenset[int]:
        """Objects that are optimizers: they own slot variables, or look like one (see markers)."""
        found = {n.id for n in self.nodes if n.slots}
        for node in self.nodes:
            names = {name for name, _ in node.children}
            if names & set(_OPTIMIZER_MARKERS):
                found.add(node.id)
            found.update(c for name, c in node.children if name in _OPTIMIZER_EDGES)
        return frozenset(found)

    def paths(self, avoid: frozenset[int] = frozenset()) -> dict[int, str]:
        """Breadth-first object paths from the root (children in saved order), not entering ``avoid``."""
        out, queue = {0: ""}, deque([0])
        while queue:
            node = queue.popleft()
            for name, child in self.nodes[node].children:
                if child not in out and child not in avoid:
                    out[child] = f"{out[node]}/{escape(name)}" if out[node] else escape(name)
                    queue.append(child)
        return out

    def variables(self) -> dict[str, VariableInfo]:
        """Every attribute's checkpoint key -> its presentation (name, role, note)."""
        opts = self.optimizers()
        model_paths = self.paths(avoid=opts)
        slot_of = {s.slot: (s, opt) for opt in opts for s in self.nodes[opt].slots}
        slot_of.update(self._listed_slots(opts))
        names = {}
        for node in self.nodes:
            for attr in node.attributes:
                names[attr.checkpoint_key] = self._name(node.id, attr, model_paths)
        # TF names of weights, longest first, for slots known only by name ("Adam/m/dense/kernel").
        weights = sorted(((a.full_name, names[a.checkpoint_key]) for n in self.nodes if n.id in model_paths
                          for a in n.attributes if a.full_name), key=lambda item: -len(item[0]))
        out = {}
        for node in self.nodes:
            for attr in node.attributes:
                key, name = attr.checkpoint_key, names[attr.checkpoint_key]
                if node.id in model_paths:
                    role, note = self._model_role(attr)
                elif node.id in slot_of:
                    slot, _ = slot_of[node.id]
                    owner = self.nodes[slot.original].attributes
                    of = names[owner[0].checkpoint_key] if owner else f"node {slot.original}"
                    role, note = Role.OPTIMIZER, f"optimizer slot {slot.name!r} of {of}"
                else:
                    owner = next((n for w, n in weights if attr.full_name.endswith("/" + w)), None)
                    role, note = Role.OPTIMIZER, (f"optimizer slot {attr.full_name!r} of {owner}" if owner
                                                  else f"optimizer state {attr.full_name or name!r}")
                out[key] = VariableInfo(key, name, node.id, role, note, attr.full_name)
        return out

    def _name(self, node: int, attr: Attribute, model_paths: dict[int, str]) -> str:
        if node in model_paths:
            base = model_paths[node]
        elif attr.checkpoint_key.endswith(VALUE_SUFFIX):
            return attr.checkpoint_key[: -len(VALUE_SUFFIX)]
        else:
            return attr.checkpoint_key
        return base if attr.name == "VARIABLE_VALUE" else f"{base}/.ATTRIBUTES/{escape(attr.name)}"

    def _model_role(self, attr: Attribute) -> tuple[Role, str]:
        if attr.checkpoint_key == "save_counter" + VALUE_SUFFIX:
            return Role.BOOKKEEPING, "tf.train.Checkpoint save counter"
        if attr.name != "VARIABLE_VALUE":
            return Role.BOOKKEEPING, f"serialized object attribute {attr.name!r}, not a weight"
        role, note = classify_tf1(attr.full_name)
        return (role, note) if role in (Role.EMA, Role.BOOKKEEPING) else (Role.WEIGHT, "")

    def _listed_slots(self, opts: frozenset[int]) -> dict[int, tuple[Slot, int]]:
        """Keras 3 optimizers keep slots in lists (``_momentums``, ``_velocities``, ...) index-aligned
        with ``_trainable_variables``; no ``slot_variables`` are written."""
        out = {}
        for opt in opts:
            targets = self.child(opt, "_trainable_variables")
            if targets is None:
                continue
            owners = self.nodes[targets].children
            for list_name, list_node in self.nodes[opt].children:
                items = self.nodes[list_node].children
                if list_name in ("_variables", "_trainable_variables") or len(items) != len(owners):
                    continue
                for (_, slot_node), (_, owner) in zip(items, owners):
                    if not self.nodes[slot_node].children:
                        out[slot_node] = (Slot(owner, list_name.lstrip("_"), slot_node), opt)
        return out
