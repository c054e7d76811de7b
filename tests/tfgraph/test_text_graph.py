"""Text-format GraphDefs (``.pbtxt``): re-encoded to the binary message TF would write (checked with
TF's own text_format parser), then converted like a ``.pb``; hostile text is one clear error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import require_tf
from tests.tfgraph.graphs import run_generated
from tf2torch import api
from tf2torch.errors import FormatError
from tf2torch.readers.graph.text import text_to_binary

GRAPHS = Path(__file__).resolve().parents[2] / "fixtures" / "graphs"


def test_a_text_graph_is_the_same_graph(tmp_path):
    tf = require_tf()
    from google.protobuf import text_format

    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString((GRAPHS / "frozen.pb").read_bytes())
    text = text_format.MessageToString(graph)
    (tmp_path / "frozen.pbtxt").write_text(text)
    again = tf.compat.v1.GraphDef()
    again.ParseFromString(text_to_binary(text, "frozen.pbtxt"))
    for node in graph.node:  # experimental_type (full-type annotations) is the one field not carried over
        node.ClearField("experimental_type")
    assert again == graph
    io = np.load(GRAPHS / "io.npz")
    got = run_generated(api.convert(tmp_path / "frozen.pbtxt", None, dry_run=True), io["input"])
    rel = float(np.abs(got - io["output"]).max() / np.abs(io["output"]).max())
    print(f"frozen.pbtxt: max rel err vs TF {rel:.2e}")
    assert rel <= 1e-5


@pytest.mark.parametrize("text, needle", [
    ('node { name: "a" op: "Const" colour: 3 }', "NodeDef has no field 'colour'"),
    ('node { name: "a" op: "Const" ', "unbalanced braces in NodeDef"),
    ('node { name: "a" } }', "unbalanced braces"),
    ("node { attr { key: 'x' value { i: 12abc } } }", "'12abc' is not a int"),
    ('node { name: "\\q" }', "bad escape"),
    ('node { attr { key: "k" value { ' + 'func { name: "f" attr { key: "k" value { ' * 30,
     "nested more than 64 deep"),
    ("\x00\x01binary", "not a text GraphDef"),
])
def test_hostile_text_is_one_clear_error(tmp_path, text, needle):
    path = tmp_path / "bad.pbtxt"
    path.write_text(text)
    with pytest.raises(FormatError, match=needle):
        api.read(path)
