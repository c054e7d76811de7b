"""A TF1 checkpoint (+ .meta) onto a naive user port, with no flags and no rules: SAME from the graph
for the convs, the SAME max pool tied to its module by position in the forward pass, the Dense after
an NHWC Flatten detected from the graph (Reshape -> MatMul) and checked on the forward pass, BN epsilon
from the graph. Compared with the logits TF computed for the fixture (fixtures/make_fixtures.make_tf1)."""

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.util import load_source, state_dict, to_torch_layout
from tf2torch import api
from tf2torch.errors import MappingError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NET = Path(__file__).with_name("tf1_user_net.py")
UNUSED = ("^embedding/", "^extras/")  # variables of the fixture the port has no place for


def _run(result):
    model = load_source(result.model_source, NET.with_name("model.py"))["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    io = np.load(FIXTURES / "tf1/io.npz")
    with torch.no_grad():
        out = model.eval()(to_torch_layout(io["input"]))
    return out, torch.from_numpy(io["output"])


def _convert(**options):
    return api.convert(FIXTURES / "tf1/model.ckpt", None, dry_run=True, model=f"{NET}:Net",
                       allow_unexpected=UNUSED, **options)


@pytest.mark.parametrize("input_shape", [(1, 3, 12, 12), None], ids=["static", "dynamic"])
def test_tf1_checkpoint_onto_naive_port_with_no_flags_and_no_rules(input_shape):
    result = _convert(input_shape=input_shape)
    counts = result.report.counts()
    assert counts["missing"] == 0 and counts["mismatched"] == 0
    assert {e.source for e in result.report.by_status("unexpected")} == {"embedding/table", "extras/bf16",
                                                                          "extras/half"}
    kinds = {r["module"]: r["kind"] for r in result.report.rewrites}
    assert kinds["bn1"] == "eps" and "conv1" in kinds and kinds["pool"] in ("pad", "pool")
    assert "tied by position" in next(r["what"] for r in result.report.rewrites if r["module"] == "pool")
    mapped = {e.key: e.layout for e in result.report.by_status("mapped")}
    assert "rows HWC -> CHW" in mapped["fc.weight"], mapped["fc.weight"]
    out, expected = _run(result)
    diff = (out - expected).abs().max().item()
    print(f"TF1 checkpoint onto naive port ({'static' if input_shape else 'dynamic'}), no rules: "
          f"max abs diff {diff:.2e}, max |logit| {expected.abs().max().item():.2f}")
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_unused_source_variables_fail_the_conversion_by_name():
    with pytest.raises(MappingError) as caught:
        api.convert(FIXTURES / "tf1/model.ckpt", None, dry_run=True, model=f"{NET}:Net")
    message = str(caught.value)
    print(message)
    assert "'embedding/table' [10, 4]" in message and "--allow-unexpected" in message


def test_a_users_layout_rule_wins_over_the_graph(tmp_path):
    """The graph's evidence fills what the rules do not say; a wrong rule is the user's word (and
    shows: plain Dense rows give other logits)."""
    rules = tmp_path / "rules.toml"
    rules.write_text('[layouts]\n"fc.weight" = "dense"\n')
    result = _convert(rules=rules, input_shape=(1, 3, 12, 12))
    out, expected = _run(result)
    diff = (out - expected).abs().max().item()
    print(f"with a plain-Dense rule over the graph's Flatten: max abs diff {diff:.2e}")
    assert diff > 1e-2
