# Two commands on a fresh machine: `make demo` (convert a shipped fixture) and `make test`.
# While editing, `make test-fast` (no TensorFlow, ~2 min on 2 cores); CI (.ci/run) runs `make lint` then `make test`.
# Each creates .venv and installs what it needs (the tf, dev and test extras). Torch: the CPU wheel is installed first, so the
# range declared in pyproject.toml is already met and pip never fetches a multi-GB CUDA build.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip -q --disable-pip-version-check
STAMP  := $(VENV)/.installed
TORCH  ?= torch==2.13.0
DEMO_OUT ?= demo-out

.PHONY: install test test-fast demo bench bench-models fixtures fuzz lint clean hf5-venv

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install "$(TORCH)"
	$(PIP) install -e '.[tf,dev,test]'
	touch $(STAMP)

install: $(STAMP)

# CI runs this (see .ci/run). TF2TORCH_REQUIRE_TF=1 turns "TensorFlow missing" into a failure, not a skip.
# Two workers (pytest-xdist), one test file each at a time (--dist loadfile: a file's module-scoped models are
# built once): most tests run one thread at a time, so the two cores halve the wall time (10m51s -> 7m09s here).
test: $(STAMP) hf5-venv
	TF2TORCH_REQUIRE_TF=1 $(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile

# The quick lane while editing: no TensorFlow in the process. TF2TORCH_FAST=1 makes tests/conftest.py block
# tensorflow, keras, tf_keras, transformers, keras_hub and tf_slim before collection, deselect the tests marked `tf`
# and turn require_tf/require_keras/require_package into skips (never failures) in this lane only; the session fails
# if one of those packages was imported anyway. Everything else runs. `make test` is unchanged and still the gate.
# OMP_NUM_THREADS=1: the tensors are tiny, and a second torch thread on a busy 2-core machine only spins (the export
# tests took 35 s instead of 15 s). -rfE lists failures and errors only, not the fast lane's expected skips.
test-fast: $(STAMP)
	TF2TORCH_FAST=1 OMP_NUM_THREADS=1 $(PY) -m pytest -q -p no:cacheprovider -rfE

# transformers 5 (no TF classes) loading what tf2torch wrote: tests/hf/test_hf_v5.py runs tests/hf/load_in_v5.py
# here. A venv of its own: the test extra pins transformers 4.57, the last line with TF classes, to build the inputs.
HF5_VENV ?= .venv-hf5
$(HF5_VENV)/.installed:
	$(PYTHON) -m venv $(HF5_VENV)
	$(HF5_VENV)/bin/python -m pip -q --disable-pip-version-check install "$(TORCH)"
	$(HF5_VENV)/bin/python -m pip -q --disable-pip-version-check install "transformers==5.23.0" safetensors numpy
	touch $@

hf5-venv: $(HF5_VENV)/.installed

# CI runs this too, before the tests (see .ci/run): any ruff finding fails CI.
lint: $(STAMP)
	$(PY) -m ruff check tf2torch tests fixtures benchmarks

demo: $(STAMP)
	rm -rf $(DEMO_OUT)
	$(VENV)/bin/tf2torch inspect fixtures/keras3/cnn.keras
	$(VENV)/bin/tf2torch convert fixtures/keras3/cnn.keras -o $(DEMO_OUT)
	$(VENV)/bin/tf2torch verify fixtures/keras3/cnn.keras $(DEMO_OUT)
	@echo "demo: wrote $(DEMO_OUT)/ (model.py, model.safetensors, report.json) and verified it against Keras"

fixtures: $(STAMP)
	$(PY) fixtures/make_fixtures.py

bench: $(STAMP) bench-models
	$(PY) benchmarks/run.py
	$(PY) benchmarks/hf_bench.py

# Converted-model speed against tf2onnx -> onnx2torch, Keras 3 on torch and torchvision (model_speed.py), and of converted
# .tflite models against LiteRT's interpreter (TF's and ai-edge-litert's) and tflite2onnx -> onnx2torch (tflite_speed.py).
# onnx2torch needs torchvision, and PyPI's torchvision does not import beside the CPU torch 2.13.0 wheel; torch 2.14.1 +
# torchvision 0.29.1 do (on disk here), so the peers and tf2torch's models all run in a venv of their own.
BENCH_VENV ?= .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip -q --disable-pip-version-check install "torch==2.14.1" "torchvision==0.29.1"
	$(BENCH_VENV)/bin/python -m pip -q --disable-pip-version-check install -e '.[tf]' "tf2onnx==1.17.0" "onnx2torch==1.5.15" onnx \
		"tflite2onnx==0.4.1" "ai-edge-litert==2.3.0"
	touch $@

bench-models: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python benchmarks/model_speed.py
	$(BENCH_VENV)/bin/python benchmarks/tflite_speed.py

fuzz: $(STAMP)
	$(PY) -m tests.fuzz --cases 50000

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(HF5_VENV) $(DEMO_OUT) .pytest_cache .ruff_cache
