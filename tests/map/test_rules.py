"""The rules file: parsed strictly, every mistake named with the file and the rule."""

import pytest

from tf2torch.errors import UsageError
from tf2torch.map.rules import load_rules


def write(tmp_path, text):
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return path


def test_all_sections(tmp_path):
    rules = load_rules(write(tmp_path, """
[[rename]]
pattern = "^resnet_model/"
replace = ""
[pairs]
"fc/DW" = "classifier.weight"
[skip]
patterns = ["^aux/"]
[layouts]
"fc.weight" = "dense_after_flatten:7,7,64"
[padding]
"stem" = "valid"
"""))
    assert rules.rename("resnet_model/conv1/DW") == "conv1/DW"
    assert rules.pairs == {"fc/DW": "classifier.weight"}
    assert rules.skipped("aux/head/kernel") and not rules.skipped("head/kernel")
    assert rules.layouts["fc.weight"].out_shape((7 * 7 * 64, 10)) == (10, 7 * 7 * 64)
    assert rules.padding == {"stem": "valid"}


@pytest.mark.parametrize("text, needle", [
    ("[[rename]]\npattern = '('\nreplace = ''\n", "invalid regex"),
    ("[pairs]\nx = 1\n", "[pairs]"),
    ("[layouts]\n'fc.weight' = 'sideways'\n", "unknown layout"),
    ("[layouts]\n'fc.weight' = 'dense_after_flatten:0,3'\n", "positive sizes"),
    ("[padding]\nstem = 'maybe'\n", "'same' or 'valid'"),
    ("[extra]\n", "unknown section"),
    ("not toml = = =", "not a valid TOML"),
], ids=["bad-regex", "pairs-not-strings", "unknown-layout", "bad-flatten", "bad-padding", "unknown-section", "not-toml"])
def test_mistakes_name_the_file(tmp_path, text, needle):
    with pytest.raises(UsageError) as info:
        load_rules(write(tmp_path, text))
    message = str(info.value)
    assert needle in message and "rules.toml" in message and "\n" not in message
