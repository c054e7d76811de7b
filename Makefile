# Two commands on a fresh machine: `make demo` (convert a shipped fixture) and `make test`.
# Each creates .venv and installs what it needs (the tf, dev and test extras). Torch: the CPU wheel is installed first, so the
# range declared in pyproject.toml is already met and pip never fetches a multi-GB CUDA build.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip -q --disable-pip-version-check
STAMP  := $(VENV)/.installed
TORCH  ?= torch==2.13.0
DEMO_OUT ?= demo-out

.PHONY: install test test-fast demo bench fixtures fuzz lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install "$(TORCH)"
	$(PIP) install -e '.[tf,dev,test]'
	touch $(STAMP)

install: $(STAMP)

# CI runs this (see .ci/run). TF2TORCH_REQUIRE_TF=1 turns "TensorFlow missing" into a failure, not a skip.
test: $(STAMP)
	TF2TORCH_REQUIRE_TF=1 $(PY) -m pytest -q -p no:cacheprovider

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

bench: $(STAMP)
	$(PY) benchmarks/run.py

fuzz: $(STAMP)
	$(PY) -m tests.fuzz --cases 50000

clean:
	rm -rf $(VENV) $(DEMO_OUT) .pytest_cache .ruff_cache
