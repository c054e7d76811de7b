"""Assemble ``model.py`` for a converted Keras model: helpers, classes, build_model and load_model."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from ..interface import CHANNELS_FIRST, interface_layout, torch_shape
from ..layers.base import TensorInfo
from ..layers.graph import Generated
from .emit import GeneratedFile, literal

_RUNTIME = Path(__file__).with_name("runtime.py")
# Where helper classes are defined. Their text is read from the files, never imported: both modules
# import torch, and converting to safetensors must not (tests/test_lazy_imports.py).
_HELPERS = tuple(Path(__file__).with_name(f"{name}.py")
                 for name in ("helpers", "helpers_keras_hub", "helpers_keras_hub_llm", "helpers_keras_hub_t5",
                              "helpers_keras_hub_mobilenet", "helpers_keras_hub_hgnetv2",
                              "helpers_keras_hub_dinov2", "helpers_keras_hub_efficientnet",
                              "helpers_keras_hub_tasks", "helpers_preprocessing"))
_INLINE_MODULES = Path(__file__).parent.parent / "rewrite" / "modules.py"  # defines INLINE_CLASSES


def runtime_source() -> str:
    """The weight reader generated files carry: runtime.py minus its docstring and imports."""
    lines = _RUNTIME.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("_SAFETENSORS_DTYPES"))
    return "\n".join(lines[start:]) + "\n"


@cache
def _definitions(path: Path) -> tuple[dict[str, str], dict[str, object]]:
    """A module file's top-level class and function sources (decorators included, as
    ``inspect.getsource`` gives them) and its literal constants, read with ``ast``."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    sources: dict[str, str] = {}
    constants: dict[str, object] = {}
    for node in ast.parse(text, str(path)).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            sources[node.name] = "".join(lines[start - 1:node.end_lineno])
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass  # not a literal (a class, a call): not a constant we need
    return sources, constants


def helper_sources(names: list[str]) -> list[str]:
    """Source text of each helper class: SAME-padding modules from ``rewrite/modules.py``
    (``INLINE_CLASSES``), the others from ``codegen/helpers.py`` and ``codegen/helpers_keras_hub.py``."""
    inline_sources, constants = _definitions(_INLINE_MODULES)
    inline = constants.get("INLINE_CLASSES", ())
    helpers = {name: source for path in _HELPERS for name, source in _definitions(path)[0].items()}
    return [inline_sources[name] if name in inline else helpers[name] for name in names]  # type: ignore[operator]


def footer(main: str, weights_name: str, input_doc: str, missing: tuple[str, ...] = ()) -> str:
    """build_model() / load_model(); ``missing`` lists keys the weights file lacks on purpose."""
    return "\n".join([
        runtime_source(),
        "",
        f"WEIGHTS = Path(__file__).with_name({literal(weights_name)})",
        f"MISSING_KEYS = {literal(tuple(missing))}  # reported missing at conversion; the model keeps its init",
        "",
        "",
        "def build_model():",
        f'    """The model with freshly initialised weights. {input_doc}"""',
        f"    return {main}()",
        "",
        "",
        "def load_model(weights=None, inference=False):",
        '    """The model with the converted weights (default: the file next to this one), in eval mode;',
        '    ``inference=True``: its inference form (``fuse``: BatchNorms folded into the layer before them)."""',
        "    model = build_model()",
        "    state = read_weights(WEIGHTS if weights is None else weights)",
        "    result = model.load_state_dict(state, strict=not MISSING_KEYS)",
        "    # BatchNorm fills a missing num_batches_tracked itself, so missing may be a subset of MISSING_KEYS",
        "    if MISSING_KEYS and (set(result.missing_keys) - set(MISSING_KEYS) or result.unexpected_keys):",
        "        raise RuntimeError(f'weights do not match the model: {result}')",
        "    return fuse(model) if inference else model.eval()",
    ])


def _size_guards(gen: Generated) -> list[str]:
    """First lines of the model's forward when static SAME padding was planned for its input size:
    at another size it would silently compute something else (or a wrongly shaped output). Switched on by
    the SAME plans themselves (``Generated.sized``), not by the report's notes."""
    if not gen.sized:
        return []
    lines = []
    for name, info in gen.inputs:
        if info.rank < 3 or any(s is None for s in info.shape[:-1]):
            continue
        sizes = [int(s) for s in info.shape[:-1]]  # Keras (…, spatial, C): spatial is all but the channels
        where = "2:" if interface_layout(info.layout, info.rank) == CHANNELS_FIRST else "1:-1"
        # a list compare and a constant message: TorchScript, torch.export and ONNX take it as it is
        lines.append(f"if list({name}.shape[{where}]) != {sizes!r}:  # TF 'SAME' pads below are planned for it")
        lines.append(f"    raise ValueError({literal(f'{name}: this model was converted for inputs of spatial size {tuple(sizes)}; convert again with --input-shape for another size')})")
    return lines


def render(gen: Generated, source_name: str, weights_name: str) -> str:
    main = gen.classes[-1].name
    guards = _size_guards(gen)
    gen.classes[-1].guards = guards
    shapes = ", ".join(f"{name}: (N, {', '.join('?' if s is None else str(s) for s in _torch_shape(info))})"
                       for name, info in gen.inputs)
    doc = (f"PyTorch model generated by tf2torch from {source_name!r}.\n\n"
           f"Inputs: {shapes}.\nLoad it with load_model(); needs only torch.\n")
    file = GeneratedFile(doc=doc, helpers=helper_sources(gen.helpers), classes=gen.classes, main=main,
                         weights_name=weights_name, footer=footer(main, weights_name, f"Inputs: {shapes}."))
    return file.render()


def _torch_shape(info: TensorInfo) -> tuple:
    """An input's shape without batch in the generated model's layout, for the docstring."""
    return torch_shape(info.shape, interface_layout(info.layout, info.rank))
