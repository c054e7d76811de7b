"""The fuzz targets (``python -m tests.fuzz``): name, share of the cases, how a case is made and run.

Each ``make`` is a pure function of its ``random.Random`` (mutations of the real fixtures in ``fixtures/``);
each ``run`` may raise nothing but ``Tf2TorchError`` (one line) on hostile input. The mutators live in
``tests/fuzzing/binary.py`` and ``keras_files.py``, the targets in ``targets_tf.py`` and ``targets_keras.py``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.fuzzing import targets_keras as k
from tests.fuzzing import targets_tf as t
from tests.fuzzing import targets_tflite as lite
from tests.fuzzing.seeds import Case, InvariantError, materialize


@dataclass(frozen=True)
class Target:
    name: str
    weight: float  # share of --cases (cost differs ~20x between targets)
    make: Callable[[random.Random], Case]
    run: Callable[[Path, Case], None]
    doc: str


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("proto", 8, t.make_proto, t.run_proto, "protobuf wire decoder and every typed accessor"),
    Target("table", 8, t.make_table, t.run_table, "LevelDB table: footer, blocks, restarts, CRCs"),
    Target("bundle", 9, t.make_bundle, t.run_bundle, "tensor bundle header/entries/shards, every tensor read"),
    Target("objectgraph", 6, t.make_objectgraph, t.run_objectgraph, "TF2 TrackableObjectGraph decoding"),
    Target("metagraph", 4, t.make_metagraph, t.run_metagraph, ".meta MetaGraphDef ops and variables"),
    Target("graphdef", 4, t.make_graphdef, t.run_graphdef, "frozen GraphDef .pb: nodes, attrs, tensors, lowering"),
    Target("pbtxt", 3, t.make_pbtxt, t.run_pbtxt, "text-format GraphDef parser and re-encoding"),
    Target("tf2graph", 3, t.make_tf2graph, t.run_tf2graph, "SavedModel functions, signatures, captures, inlining"),
    Target("keras_config", 8, k.make_config, k.run_config, "parse_model_config / parse_model_json"),
    Target("keras_h5", 5, k.make_keras_h5, k.run_keras_h5, "Keras .h5 / .weights.h5, every weight read"),
    Target("keras_zip", 4, k.make_keras_zip, k.run_keras_zip, "Keras 3 .keras archive, every weight read"),
    Target("savedmodel", 3, k.make_savedmodel, k.run_savedmodel, "SavedModel dir incl. keras_metadata.pb"),
    Target("detect", 4, k.make_detect, k.run_detect, "format detection and checkpoint state files"),
    Target("slicekey", 3, t.make_slicekey, t.run_slicekey, "partitioned-variable slice keys"),
    Target("strings", 3, t.make_strings, t.run_strings, "DT_STRING tensor layout"),
    Target("convert", 5, k.make_convert, k.run_convert, "api.convert(dry_run=True), plans produced on 30%"),
    Target("tflite", 5, lite.make_tflite, lite.run_tflite, ".tflite flatbuffer: tables, buffers, lowering"),
    Target("task", 3, lite.make_task, lite.run_task, "MediaPipe .task zip: names, sizes, members, each model"),
)}




__all__ = ["TARGETS", "Case", "Target", "InvariantError", "materialize"]
