"""Hostile and broken inputs, each a real file, through the CLI: nothing crashes, nothing runs, nothing is
half-written.

Every refusal is exit code 1 with one line on stderr naming the file or variable, no traceback, and no
output directory (or staging directory) left behind. Names built to inject code convert, and the
generated ``model.py`` compiles, passes ruff, imports and runs, and never executes them.
"""

from __future__ import annotations

import ast
import io
import json
import os
import pickle
import shutil
import signal
import struct
import subprocess
import sys
import time
import tokenize
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from tests.conftest import require_keras, require_tf
from tf2torch.cli import EXIT_ERROR, EXIT_OK, EXIT_USAGE, main
from tf2torch.readers.bundle import Bundle

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
INJECTION = 'x"); import os; os.system("touch PWNED"); ("'
NASTY_NAMES = [INJECTION, "new\nline", "q'uote\"", "back\\slash", "ünï©ødé 中文", "tab\tx", "class", "123"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}


def run_cli(*args: object) -> object:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert "Traceback" not in result.output + result.stderr
    return result


def refused(result, *needles: str, code: int | None = EXIT_ERROR) -> str:
    """Exit ``code`` (None: any non-zero) and exactly one stderr line, an error naming each of ``needles``."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    print(lines)  # shown with -s: the messages users get
    assert (result.exit_code == code) if code is not None else (result.exit_code != 0), \
        (result.exit_code, result.output, result.stderr)
    assert len(lines) == 1 and lines[0].startswith("tf2torch: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def listing(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def copy_fixture(name: str, dest: Path) -> Path:
    shutil.copytree(FIXTURES / name, dest)
    return dest


def refuses_without_output(tmp_path: Path, source: Path, *needles: str, args: tuple = ()) -> str:
    before = listing(tmp_path)
    line = refused(run_cli("convert", source, "-o", tmp_path / "out", *args), *needles)
    assert listing(tmp_path) == before  # no OUTDIR, no .out.tf2torch-partial-*, nothing extracted
    return line


# --- broken checkpoints ----------------------------------------------------------------------------

def test_truncated_data_file(tmp_path):
    ckpt = copy_fixture("tf1", tmp_path / "ckpt")
    data = ckpt / "model.ckpt.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    refuses_without_output(tmp_path, ckpt / "model.ckpt", "model.ckpt.data-00000-of-00001", "variable", "truncated")


@pytest.fixture
def flipped(tmp_path) -> Path:
    """The tf1 fixture with one byte flipped in the middle of conv1/weights."""
    ckpt = copy_fixture("tf1", tmp_path / "ckpt")
    entry = Bundle(ckpt / "model.ckpt").entries["conv1/weights"]
    data = ckpt / "model.ckpt.data-00000-of-00001"
    raw = bytearray(data.read_bytes())
    raw[entry.offset + entry.size // 2] ^= 0x10
    data.write_bytes(bytes(raw))
    return ckpt / "model.ckpt"


def test_flipped_byte_is_a_crc_error_naming_the_variable(tmp_path, flipped):
    refuses_without_output(tmp_path, flipped, "'conv1/weights'", "CRC32C", args=("--weights-only",))


def test_flipped_byte_passes_with_no_verify_crc(tmp_path, flipped):
    result = run_cli("convert", flipped, "-o", tmp_path / "out", "--no-verify-crc", "-q", "--weights-only")
    assert result.exit_code == EXIT_OK, result.stderr
    assert (tmp_path / "out" / "model.safetensors").is_file()


def test_inspect_check_names_the_bad_tensor(flipped):
    result = run_cli("inspect", flipped, "--check")
    bad = [line for line in result.output.splitlines() if line.startswith("BAD ")]
    assert result.exit_code == EXIT_ERROR
    assert len(bad) == 1 and bad[0].startswith("BAD conv1/weights:") and "CRC32C" in bad[0], result.output


def test_garbage_index(tmp_path):
    ckpt = copy_fixture("tf1", tmp_path / "ckpt")
    index = ckpt / "model.ckpt.index"
    index.write_bytes(np.random.default_rng(0).bytes(index.stat().st_size))
    refuses_without_output(tmp_path, ckpt / "model.ckpt", "model.ckpt.index")


def test_missing_shard(tmp_path):
    ckpt = copy_fixture("tf1_sharded", tmp_path / "ckpt")
    (ckpt / "model.ckpt.data-00001-of-00002").unlink()
    refuses_without_output(tmp_path, ckpt / "model.ckpt", "model.ckpt.data-00001-of-00002", "missing")


# --- wrong kinds of files --------------------------------------------------------------------------

@pytest.mark.parametrize("name, body, needle", [
    ("model.h5", b"just some text\n", "HDF5"),
    ("model.keras", b"\x89PNG\r\n\x1a\n" + bytes(64), "zip"),
    ("model.keras", b"", "empty"),
], ids=["text-named-h5", "png-named-keras", "empty-keras"])
def test_wrong_file_type(tmp_path, name, body, needle):
    (tmp_path / name).write_bytes(body)
    refuses_without_output(tmp_path, tmp_path / name, name, needle)


def test_empty_directory(tmp_path):
    (tmp_path / "empty").mkdir()
    refuses_without_output(tmp_path, tmp_path / "empty", "empty")


def _rezip(source: Path, dest: Path, edit) -> Path:
    """Copy a .keras archive member by member, ``edit(members)`` changing the (name, bytes) list."""
    with zipfile.ZipFile(source) as zf:
        members = [(info.filename, zf.read(info)) for info in zf.infolist()]
    with zipfile.ZipFile(dest, "w") as zf:
        for name, body in edit(members):
            zf.writestr(zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0)), body)
    return dest


@pytest.mark.parametrize("member", ["../../x", "/tmp/tf2torch-zip-slip-x", "a/../../x"], ids=["parent", "absolute", "nested-parent"])
def test_zip_slip_member_is_refused_and_nothing_extracted(tmp_path, monkeypatch, member):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    source = _rezip(FIXTURES / "keras3/cnn.keras", work / "model.keras", lambda m: [*m, (member, b"pwned")])
    monkeypatch.chdir(work)
    refuses_without_output(tmp_path, source, member, "model.keras")
    assert not Path("/tmp/tf2torch-zip-slip-x").exists()
    assert not (tmp_path / "x").exists() and not (tmp_path / "a" / "x").exists()


# --- HDF5 links and virtual datasets ---------------------------------------------------------------

def _weight_path(path: Path) -> str:
    with h5py.File(path, "r") as f:
        found = []
        f["model_weights"].visititems(lambda n, o: found.append(n) if isinstance(o, h5py.Dataset) else None)
    return "model_weights/" + sorted(found)[0]


@pytest.mark.parametrize("kind", ["external-link", "virtual-dataset", "soft-link"])
def test_hdf5_indirection_where_a_weight_should_be(tmp_path, kind):
    model = tmp_path / "model.h5"
    shutil.copy(FIXTURES / "keras2/cnn.h5", model)
    weight = _weight_path(model)
    with h5py.File(model, "r+") as f:
        shape, dtype = f[weight].shape, f[weight].dtype
        del f[weight]
        if kind == "external-link":  # the target file exists and holds a dataset of the right shape
            with h5py.File(tmp_path / "secret.h5", "w") as g:
                g["data"] = np.full(shape, 7, dtype)
            f[weight] = h5py.ExternalLink("secret.h5", "/data")
        elif kind == "virtual-dataset":
            layout = h5py.VirtualLayout(shape=shape, dtype=dtype)
            layout[...] = h5py.VirtualSource(str(tmp_path / "secret.h5"), "data", shape=shape)
            f.create_virtual_dataset(weight, layout)
        else:
            f[weight] = h5py.SoftLink("/model_weights")
    needle = {"external-link": "ExternalLink", "virtual-dataset": "virtual dataset", "soft-link": "SoftLink"}[kind]
    refuses_without_output(tmp_path, model, "model.h5", weight.rsplit("/", 1)[0], needle)


# --- code in the model file: Lambda layers and custom classes are refused, never run ----------------

def _touch_lambda(marker: Path):
    """A function that leaves ``marker`` behind when it runs (its path is a constant of its code)."""
    return eval(f"lambda x: (__import__('pathlib').Path({str(marker)!r}).touch(), x * 2.0)[1]")  # noqa: S307


@pytest.mark.parametrize("keras_module", ["keras", "tf_keras"], ids=["keras3", "keras2"])
def test_lambda_layer_is_refused_and_not_run(tmp_path, keras_module):
    keras = require_keras(keras_module)
    marker = tmp_path / "LAMBDA_RAN"
    inputs = keras.Input((4,), name="image")
    hidden = keras.layers.Dense(3, name="dense")(inputs)
    model = keras.Model(inputs, keras.layers.Lambda(_touch_lambda(marker), name="double")(hidden))
    source = tmp_path / ("model.keras" if keras_module == "keras" else "model.h5")
    model.save(source)
    marker.unlink(missing_ok=True)  # building the model called the function once, symbolically
    refuses_without_output(tmp_path, source, "'double'", "Lambda")
    result = run_cli("inspect", source)  # listing the layers does not run it either
    assert result.exit_code in (EXIT_OK, EXIT_ERROR) and not marker.exists()


def test_custom_layer_class_is_refused_and_its_module_never_imported(tmp_path):
    keras = require_keras()

    @keras.saving.register_keras_serializable(package="hostile")
    class Scale(keras.layers.Layer):
        def build(self, shape):
            self.scale = self.add_weight(shape=(shape[-1],), initializer="ones", name="scale")

        def call(self, x):
            return x * self.scale

    inputs = keras.Input((4,), name="image")
    keras.Model(inputs, Scale(name="scale_layer")(inputs)).save(tmp_path / "saved.keras")

    def evil_module(members):
        config = json.loads(dict(members)["config.json"])
        for layer in config["config"]["layers"]:
            if layer["class_name"] == "Scale":
                layer["module"] = "evil_mod"
        return [(n, json.dumps(config).encode() if n == "config.json" else b) for n, b in members]

    _rezip(tmp_path / "saved.keras", tmp_path / "model.keras", evil_module)
    marker = tmp_path / "IMPORTED"
    (tmp_path / "evil_mod.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n")
    # A fresh interpreter whose cwd (first on sys.path for -m) holds evil_mod.py.
    proc = subprocess.run([sys.executable, "-m", "tf2torch", "convert", "model.keras", "-o", "out"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True)
    assert proc.returncode == EXIT_ERROR, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "'scale_layer'" in proc.stderr and "Scale" in proc.stderr
    assert not marker.exists() and not (tmp_path / "out").exists()


# --- pickles are never unpickled --------------------------------------------------------------------

class _Touch:
    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


@pytest.mark.parametrize("name", ["model.pt", "model.pkl", "model.h5", "model.keras", "model.ckpt.index"])
def test_pickle_input_is_never_unpickled(tmp_path, name):
    marker = tmp_path / "UNPICKLED"
    (tmp_path / name).write_bytes(pickle.dumps({"state_dict": _Touch(marker)}))
    refuses_without_output(tmp_path, tmp_path / name, name)
    assert not marker.exists()


def test_keras_npz_weights_are_never_unpickled(tmp_path):
    marker = tmp_path / "UNPICKLED"
    npz = io.BytesIO()
    np.savez(npz, w=np.array([_Touch(marker)], dtype=object))
    source = _rezip(FIXTURES / "keras3/cnn.keras", tmp_path / "model.keras",
                    lambda m: [(n, b) for n, b in m if n != "model.weights.h5"] + [("model.weights.npz", npz.getvalue())])
    refuses_without_output(tmp_path, source, "model.weights.npz", "unpickle")
    assert not marker.exists()


def test_no_code_path_can_unpickle():
    """Every pickle-capable loader in the package is either absent or called safely (weights_only=True,
    allow_pickle off); the readers import none of them. The one module that imports ``pickle`` writes
    the ``.pt`` pickle and uses nothing of it that reads."""
    banned_modules = {"pickle", "cPickle", "marshal", "dill", "cloudpickle", "joblib", "shelve", "yaml"}
    pickle_writers = {"tf2torch/write/torch_pt.py"}
    problems = []
    for path in sorted((ROOT / "tf2torch").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(ROOT).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                allowed = {"pickle"} if where in pickle_writers and isinstance(node, ast.Import) else set()
                problems += [f"{where}:{node.lineno} imports {n}" for n in names
                             if n.split(".")[0] in banned_modules and n not in allowed]
            if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "pickle" and node.attr != "Pickler":
                problems.append(f"{where}:{node.lineno} uses pickle.{node.attr}")
                if "/readers/" in where and any(n.split(".")[0] == "torch" for n in names):
                    problems.append(f"{where}:{node.lineno} a reader imports torch")
            if not isinstance(node, ast.Call):
                continue
            func = ast.unparse(node.func)
            keywords = {k.arg: ast.unparse(k.value) for k in node.keywords}
            if func.endswith("torch.load") and keywords.get("weights_only") != "True":
                problems.append(f"{where}:{node.lineno} torch.load without weights_only=True")
            if func in ("np.load", "numpy.load") and keywords.get("allow_pickle", "False") != "False":
                problems.append(f"{where}:{node.lineno} np.load with allow_pickle")
            if func in ("eval", "exec", "__import__", "marshal.loads", "pickle.loads", "pickle.load"):
                problems.append(f"{where}:{node.lineno} calls {func}")
    assert not problems, problems


# --- names that try to become code -----------------------------------------------------------------

def check_generated(out: Path, names: list[str], input_shape: tuple[int, ...]) -> None:
    """model.py compiles, passes ruff, runs in a fresh interpreter, and the names stay data."""
    source = (out / "model.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    compile(source, "model.py", "exec")
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"json", "math", "struct", "pathlib", "torch", "torch.nn", "torch.nn.functional",
                        "__future__", "typing"}, imported
    code_names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert not code_names & {"os", "subprocess", "eval", "exec", "__import__", "open", "compile"}, code_names
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not attributes & {"system", "popen", "run", "call", "touch"}, attributes
    # Wherever a name occurs verbatim, it is inside a string literal or a comment (in practice as its
    # repr; an input name also becomes a sanitised identifier such as x_import_os_os_system_touch_PWNED).
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    inert = [(offsets[t.start[0] - 1] + t.start[1], offsets[t.end[0] - 1] + t.end[1])
             for t in tokenize.generate_tokens(io.StringIO(source).readline)
             if t.type in (tokenize.STRING, tokenize.COMMENT)]
    for name in names:  # (plain words such as "class" also occur as parts of code: class_ = ...)
        at = -1 if name.isidentifier() or name.isdigit() else source.find(name)
        while at >= 0:
            assert any(a <= at and at + len(name) <= b for a, b in inert), (name, source[max(at - 60, 0):at + 60])
            at = source.find(name, at + 1)
    # The project's own lint rules (pyproject.toml [tool.ruff]), as `make lint` applies them.
    ruff = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select",
                           "E,F,W,I,B,UP", "--ignore", "E501,B905", "--target-version", "py311", "model.py"],
                          cwd=out, capture_output=True, text=True)
    assert ruff.returncode == 0, ruff.stdout + ruff.stderr
    code = ("import sys, torch, model\n"
            f"y = model.load_model()(torch.ones({input_shape}))\n"
            "assert torch.isfinite(y).all()\n"
            "assert not any(m.split('.')[0] in ('tf2torch', 'keras', 'tensorflow', 'os_system') for m in sys.modules)\n"
            "print(tuple(y.shape))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=out, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for where in (out, out.parent, Path.cwd()):
        assert not (where / "PWNED").exists()


def test_hostile_layer_names_built_with_keras3(tmp_path, monkeypatch):
    """Keras 3 allows any layer name without '/': quotes, newlines, backslashes, unicode, keywords."""
    keras = require_keras()
    monkeypatch.chdir(tmp_path)
    inputs = keras.Input((8,), name=NASTY_NAMES[0])
    x = inputs
    for name in NASTY_NAMES[1:]:
        x = keras.layers.Dense(4, name=name)(x)
    model = keras.Model(inputs, x, name="hostile")
    model.save(tmp_path / "model.keras")
    expected = np.ones((1, 8), np.float32)  # Keras cannot run it (TF scope names), so numpy does
    for layer in model.layers[1:]:
        kernel, bias = layer.get_weights()
        expected = expected @ kernel + bias
    result = run_cli("convert", tmp_path / "model.keras", "-o", tmp_path / "out", "-q")
    assert result.exit_code == EXIT_OK, result.stderr
    check_generated(tmp_path / "out", NASTY_NAMES, (1, 8))
    code = "import model, torch; print(model.load_model()(torch.ones(1, 8)).detach().numpy().tolist())"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path / "out", capture_output=True, text=True)
    np.testing.assert_allclose(np.array(json.loads(proc.stdout)), expected, atol=1e-5)


def _rename_everywhere(value, renames: dict[str, str]):
    if isinstance(value, str):
        return renames.get(value, value)
    if isinstance(value, list):
        return [_rename_everywhere(v, renames) for v in value]
    if isinstance(value, dict):
        return {k: _rename_everywhere(v, renames) for k, v in value.items()}
    return value


def _rename_attr(obj, renames: dict[str, str]) -> None:
    """The ``name`` tag Keras >= 3.10 puts on each vars group; HDF5 strings cannot hold NUL, so such a
    name is dropped instead (as files of older Keras 3 versions have none)."""
    new = renames.get(obj.attrs.get("name"))
    if new is not None and "\x00" in new:
        del obj.attrs["name"]
    elif new is not None:
        obj.attrs["name"] = new


def test_hostile_names_edited_into_a_keras3_file(tmp_path, monkeypatch):
    """Names Keras refuses ('/', NUL, a newline in the model name) put straight into config.json, and the
    weights file's matching 'name' attributes."""
    keras = require_keras()
    monkeypatch.chdir(tmp_path)
    inputs = keras.Input((6,), name="image")
    x = keras.layers.Dense(5, name="first")(inputs)
    x = keras.layers.ReLU(name="act")(x)
    keras.Model(inputs, keras.layers.Dense(3, name="second")(x), name="m").save(tmp_path / "saved.keras")
    renames = {"first": 'a/b"); __import__("os").system("touch PWNED")#', "act": "nul\x00\nbyte",
               "second": "\\'\"\u2028", "m": 'model"\n"""; import os', "image": "in put\r\n"}

    def edit(members):
        out = []
        for name, body in members:
            if name == "config.json":
                body = json.dumps(_rename_everywhere(json.loads(body), renames)).encode()
            elif name == "model.weights.h5":
                buf = io.BytesIO(body)
                with h5py.File(buf, "r+") as f:
                    f.visititems(lambda _, o: _rename_attr(o, renames))
                body = buf.getvalue()
            out.append((name, body))
        return out

    _rezip(tmp_path / "saved.keras", tmp_path / "model.keras", edit)
    result = run_cli("convert", tmp_path / "model.keras", "-o", tmp_path / "out", "-q")
    assert result.exit_code == EXIT_OK, result.stderr
    check_generated(tmp_path / "out", list(renames.values()), (1, 6))


def test_hostile_names_edited_into_a_keras2_h5(tmp_path, monkeypatch):
    """tf_keras only saves scope-safe names; the model name and a weightless layer's name are edited
    into model_config, layer_names and the layer's group."""
    keras = require_keras("tf_keras")
    monkeypatch.chdir(tmp_path)
    inputs = keras.Input((6,), name="image")
    x = keras.layers.ReLU(name="act")(keras.layers.Dense(5, name="first")(inputs))
    keras.Model(inputs, keras.layers.Dense(3, name="second")(x), name="m").save(tmp_path / "model.h5")
    renames = {"act": INJECTION + "\n", "m": 'm"; import os\n'}
    with h5py.File(tmp_path / "model.h5", "r+") as f:
        config = json.loads(f.attrs["model_config"])
        f.attrs["model_config"] = json.dumps(_rename_everywhere(config, renames))
        weights = f["model_weights"]
        names = [n.decode() if isinstance(n, bytes) else n for n in weights.attrs["layer_names"]]
        weights.attrs["layer_names"] = [renames.get(n, n).encode() for n in names]
        weights.move("act", renames["act"])
    result = run_cli("convert", tmp_path / "model.h5", "-o", tmp_path / "out", "-q")
    assert result.exit_code == EXIT_OK, result.stderr
    check_generated(tmp_path / "out", list(renames.values()), (1, 6))


# --- interrupted conversion: nothing at the final path looks finished --------------------------------

@pytest.fixture(scope="module")
def big_checkpoint(tmp_path_factory) -> Path:
    """A 400 MB TF checkpoint (4 tensors of 100 MB) written by TensorFlow."""
    tf = require_tf()
    prefix = tmp_path_factory.mktemp("big") / "model.ckpt"
    rng = np.random.default_rng(0)
    tensors = [tf.constant(rng.standard_normal((5000, 5000), dtype=np.float32)) for _ in range(4)]
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=[f"layer{i}/kernel" for i in range(4)],
                      shape_and_slices=[""] * 4, tensors=tensors)
    return prefix


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_interrupted_conversion_leaves_nothing_finished(tmp_path, big_checkpoint, sig):
    out = tmp_path / "out"
    child = subprocess.Popen([sys.executable, "-m", "tf2torch", "convert", str(big_checkpoint), "-o", str(out)],
                             cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline, partial = time.monotonic() + 120, None
        while partial is None and time.monotonic() < deadline and child.poll() is None:
            staged = [p / "model.safetensors" for p in tmp_path.glob(".out.tf2torch-partial-*")]
            partial = next((p for p in staged if p.is_file() and p.stat().st_size > 1 << 20), None)
            time.sleep(0.002)
        assert partial is not None, "the conversion never got to writing (or finished too fast)"
        child.send_signal(sig)  # mid-write: the weights file exists and is growing
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert not out.exists()  # nothing under the final name
    left = sorted(p.name for p in tmp_path.iterdir())
    if sig == signal.SIGINT:
        assert child.returncode == 130 and left == [], (child.returncode, left, err)
        assert err.strip().count("\n") == 0 and ("tf2torch: abort" in err or "interrupted" in err), err
        assert "Traceback" not in err
    else:  # no cleanup can run: what remains is visibly a staging directory
        assert child.returncode == -signal.SIGKILL
        assert left and all(name.startswith(".out.tf2torch-partial-") for name in left), left


# --- inputs the fuzzer found (tests/fuzz.py): each crashed, hung or allocated before its fix ---------

def _h5_copy(tmp: Path, name: str = "keras2/cnn_weights.h5") -> Path:
    dest = tmp / Path(name).name
    shutil.copy(FIXTURES / name, dest)
    return dest


def _patch(path: Path, find: bytes, replace: bytes, at: int = 0) -> Path:
    data = path.read_bytes()
    pos = data.index(find, at)
    path.write_bytes(data[:pos] + replace + data[pos + len(replace):])
    return path


def _heap_free_object_of_size_0(tmp: Path) -> Path:
    """libhdf5 walks a global heap by object sizes; a free-space object of size 0 never advances."""
    path = _h5_copy(tmp)
    data = bytearray(path.read_bytes())
    first = data.index(b"GCOL\x01") + 16  # after the collection header: the first object's header
    data[first:first + 16] = bytes(16)  # index 0 (free space), size 0
    path.write_bytes(bytes(data))
    return path


def _forged_vlen_length(tmp: Path) -> Path:
    """A variable-length string attribute claiming 2 GiB: libhdf5 allocates it before any check."""
    path = _h5_copy(tmp)
    data = path.read_bytes()
    heap = struct.pack("<Q", data.index(b"GCOL\x01"))
    at = data.index(heap)
    while not (0 < struct.unpack("<I", data[at - 4:at])[0] < 1000 and 0 < struct.unpack("<I", data[at + 8:at + 12])[0] < 100):
        at = data.index(heap, at + 1)  # a descriptor: [length u32][collection u64][index u32]
    path.write_bytes(data[:at - 4] + struct.pack("<I", 0x7FFFFFF0) + data[at:])
    return path


def _vlen_type_byte(tmp: Path) -> Path:
    """A vlen-string datatype whose type nibble says 5: libhdf5 reads it as a sequence and segfaults."""
    return _patch(_h5_copy(tmp), b"\x19\x01\x00\x00\x10\x00\x00\x00", b"\x19\x05")


def _group_cycle(tmp: Path) -> Path:
    path = _h5_copy(tmp, "keras3/cnn.weights.h5")
    with h5py.File(path, "r+") as f:
        f["layers/conv2d/loop"] = f["layers"]  # a hard link to an ancestor
    return path


def _non_utf8_group(tmp: Path) -> Path:
    path = _h5_copy(tmp, "keras3/cnn.weights.h5")
    with h5py.File(path, "r+") as f:
        f["layers"].create_group(b"\xff\xfe")
    return path


def _rank1_dense_kernel(tmp: Path) -> Path:
    path = _h5_copy(tmp, "keras2/cnn.h5")
    with h5py.File(path, "r+") as f:
        del f["model_weights/logits/logits/kernel:0"]
        f["model_weights/logits/logits/kernel:0"] = np.zeros(480, np.float32)
    return path


def _keras_zip(tmp: Path, edit) -> Path:
    return _rezip(FIXTURES / "keras3/cnn.keras", tmp / "model.keras", edit)


def _edit_config(tmp: Path, change) -> Path:
    def edit(members):
        config = json.loads(dict(members)["config.json"])
        change(config["config"]["layers"])
        return [(n, json.dumps(config).encode() if n == "config.json" else b) for n, b in members]
    return _keras_zip(tmp, edit)


def _deep_json(tmp: Path) -> Path:
    deep = b'{"class_name": "Functional", "config": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    return _keras_zip(tmp, lambda m: [(n, deep if n == "config.json" else b) for n, b in m])


def _compression_method_99(tmp: Path) -> Path:
    path = _keras_zip(tmp, lambda m: m)
    data = bytearray(path.read_bytes())
    for signature, field in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):  # local and central headers
        at = data.index(signature)
        data[at + field:at + field + 2] = (99).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    return path


def _constant_only_call(tmp: Path) -> Path:
    def change(layers):
        layers[2]["inbound_nodes"][0]["args"] = [1.5]
    return _edit_config(tmp, change)


def _newline_in_a_lambda_name(tmp: Path) -> Path:
    def change(layers):
        layers[:] = _rename_everywhere(layers, {"bn1": "a\nb"})  # the layer and every reference to it
        layers[2]["class_name"] = "Lambda"
    return _edit_config(tmp, change)


def _rank70_tensor(tmp: Path) -> Path:
    from tests.readers.tablebuilder import entry, header, table
    from tf2torch.readers.crc import crc32c

    (tmp / "model.ckpt.data-00000-of-00001").write_bytes(bytes(4))
    (tmp / "model.ckpt.index").write_bytes(table([(b"", header()), (b"w", entry(1, (1,) * 70, 0, 4, crc32c(bytes(4))))]))
    return tmp / "model.ckpt"


def _variable_named_dotdot(tmp: Path) -> Path:
    from tests.readers.tablebuilder import write_bundle

    write_bundle(tmp / "model.ckpt", {"..": np.ones(2, np.float32), "dense/kernel": np.ones((2, 2), np.float32)},
                 {"..": 1, "dense/kernel": 1})
    return tmp / "model.ckpt"


FOUND_BY_FUZZING = {  # id: (make the file, what the one-line error names); run in a fresh process each
    "heap-object-of-size-0": (_heap_free_object_of_size_0, ["cnn_weights.h5", "global heap", "loop"]),
    "vlen-length-2GiB": (_forged_vlen_length, ["cnn_weights.h5"]),
    "vlen-type-byte": (_vlen_type_byte, ["cnn_weights.h5", "type class"]),
    "group-cycle": (_group_cycle, ["cnn.weights.h5", "linked twice"]),
    "non-utf8-group": (_non_utf8_group, ["cnn.weights.h5", "not UTF-8"]),
    "rank1-dense-kernel": (_rank1_dense_kernel, ["logits/kernel:0", "cannot reshape (480,)"]),
    "json-100000-deep": (_deep_json, ["config.json", "nested"]),
    "zip-method-99": (_compression_method_99, ["model.keras", "compression method 99"]),
    "call-without-tensor": (_constant_only_call, ["config.json", "passes no tensor"]),
    "newline-in-name": (_newline_in_a_lambda_name, ["'a\\nb'", "Lambda"]),
    "rank70-tensor": (_rank70_tensor, ["model.ckpt.index", "'w'"]),
    "variable-named-dotdot": (_variable_named_dotdot, ["'..'", "rules file"]),
}


@pytest.mark.parametrize("case", list(FOUND_BY_FUZZING), ids=list(FOUND_BY_FUZZING))
def test_found_by_fuzzing(tmp_path, case):
    """A fresh process each: a regression to a segfault, an endless libhdf5 loop or a gigabyte
    allocation fails this test (exit code, timeout, peak memory) instead of taking pytest down."""
    make, needles = FOUND_BY_FUZZING[case]
    (tmp_path / "in").mkdir()
    source = make(tmp_path / "in")
    code, stderr, peak_mib = run_measured(tmp_path, "convert", str(source), "-o", str(tmp_path / "out"))
    assert code == EXIT_ERROR, (code, stderr)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf2torch: error: ") and "Traceback" not in stderr, stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert peak_mib is None or peak_mib < 1024, f"peak RSS {peak_mib} MiB"
    assert not (tmp_path / "out").exists()


# The CLI in a fresh interpreter that resets the kernel's peak-RSS mark first (a forked child would
# otherwise inherit pytest's) and writes its own peak at exit.
MEASURED = """import atexit, sys
peak_file, sys.argv = sys.argv[1], ["tf2torch", *sys.argv[2:]]
try:
    open("/proc/self/clear_refs", "w").write("5")
    atexit.register(lambda: open(peak_file, "w").write(
        next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1]))
except OSError:
    pass
from tf2torch.cli import run
run()
"""


def run_measured(tmp_path: Path, *args: str, timeout: float = 120) -> tuple[int, str, int | None]:
    """Exit code, stderr and peak RSS in MiB (None where Linux's /proc is missing) of ``tf2torch args``."""
    peak = tmp_path / "peak-kb"
    proc = subprocess.run([sys.executable, "-c", MEASURED, str(peak), *args], env=ENV, capture_output=True,
                          text=True, timeout=timeout)
    return proc.returncode, proc.stderr, int(peak.read_text()) >> 10 if peak.is_file() else None


# --- output directory and exit codes -----------------------------------------------------------------

def test_existing_output_directory_is_refused_and_untouched(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    stamp = (out / "precious.txt").stat().st_mtime_ns
    refused(run_cli("convert", FIXTURES / "keras3/cnn.keras", "-o", out), str(out), "--force")
    assert listing(tmp_path) == {"out", "out/precious.txt"}
    assert (out / "precious.txt").read_text() == "keep me" and (out / "precious.txt").stat().st_mtime_ns == stamp


@pytest.mark.parametrize("args, code", [
    (["convert", "{fixtures}/keras3/cnn.keras", "-o", "{tmp}/out", "-q"], EXIT_OK),
    (["convert", "{tmp}/missing.keras", "-o", "{tmp}/out"], EXIT_ERROR),
    (["convert", "{fixtures}/keras3/cnn.keras"], EXIT_USAGE),
    (["convert", "{fixtures}/keras3/cnn.keras", "-o", "{tmp}/out", "--format", "npz"], EXIT_USAGE),
    (["convert", "{fixtures}/keras3/cnn.keras", "-o", "{tmp}/out", "--no-such-option"], EXIT_USAGE),
], ids=["0-success", "1-conversion-error", "2-missing-out", "2-bad-choice", "2-unknown-option"])
def test_exit_codes_of_the_real_process(tmp_path, args, code):
    argv = [a.format(fixtures=FIXTURES, tmp=tmp_path) for a in args]
    proc = subprocess.run([sys.executable, "-m", "tf2torch", *argv], env=ENV, capture_output=True, text=True)
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert (tmp_path / "out").exists() == (code == EXIT_OK)
