# Scale Out: build the book and run every test. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NB ?= chapters/01_collectives.ipynb
JB_FLAGS := --warningiserror --nitpick --keep-going
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
# Two pytest workers (pytest-xdist), each test file (each notebook) whole on one worker: the
# unit tier and the notebooks are CPU-bound and independent. The integration tier stays on one
# worker: its process tests time real runs. JOBS=1 runs everything in one process.
JOBS ?= 2
XDIST := $(if $(filter-out 1,$(JOBS)),-n $(JOBS) --dist loadfile)

.PHONY: help setup book book-clean site clean page outputs lab lint test test-fast test-integration test-notebooks\
	test-baseline test-browser browser-deps bench

help:
	@echo "make book        build the whole book to _build/html (sets everything up on first use)"
	@echo "make test        every test: lint, unit, integration, nbval (twice), clean build, browser"
	@echo "make test-fast   the unit tier: fast library tests (tests/unit; no processes, no notebooks)"
	@echo "make test-integration  processes: launcher, torchrun, demos, fuzz (tests/integration)"
	@echo "make test-notebooks    every chapter executed once under strict nbval, and tests/book's static checks"
	@echo "make test-baseline  the notebook tests with numpy on its baseline SIMD paths only"
	@echo "make test-browser  the built site and JupyterLab in headless Chromium (after make site)"
	@echo "make site        the HTML from the committed outputs, from clean (no chapter executed)"
	@echo "make page NB=chapters/01_collectives.ipynb   execute and build one chapter on its own"
	@echo "make outputs [NB=...]  re-execute chapter(s) in place to refresh committed outputs"
	@echo "make lab         open the chapters in JupyterLab"
	@echo "make bench       run the benchmarks in bench/ (prints tables)"

$(STAMP): requirements.txt pyproject.toml tools/fetch_plotly.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt
	$(BIN)/python tools/fetch_plotly.py
	@touch $(STAMP)

setup: $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build $(JB_FLAGS) .
	@echo "The book is at $(CURDIR)/_build/html/index.html"

# A clean build that executes every chapter (no cache, so the first build's warnings cannot hide).
book-clean: clean book

# What `make test` builds: from clean (warnings cannot hide), with warnings as errors, from the
# committed outputs: no chapter is executed. Valid because nbval proves, in the same `make test`
# and before this build, that executing each chapter reproduces its committed outputs.
site: $(STAMP)
	rm -rf _build
	@mkdir -p _build
	sed 's/execute_notebooks: force/execute_notebooks: "off"/' _config.yml > _build/_config.site.yml
	@grep -q 'execute_notebooks: "off"' _build/_config.site.yml
	$(BIN)/jupyter-book build $(JB_FLAGS) --config _build/_config.site.yml .

clean:
	rm -rf _build

# Rebuild one chapter: execute it in place, then rebuild the HTML from committed outputs
# (no other chapter runs).
page: $(STAMP)
	@test -f "$(NB)" || { echo "NB=$(NB) is not a notebook of this book" >&2; exit 2; }
	$(MAKE) --no-print-directory outputs NB=$(NB)
	@mkdir -p _build
	sed 's/execute_notebooks: force/execute_notebooks: "off"/' _config.yml > _build/_config.page.yml
	$(BIN)/jupyter-book build $(JB_FLAGS) --config _build/_config.page.yml .
	@echo "The book is at $(CURDIR)/_build/html/index.html"

outputs: $(STAMP)
	@for nb in $(if $(filter command line,$(origin NB)),$(NB),chapters/*.ipynb); do \
	  echo "executing $$nb"; \
	  $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.timeout=600 --ExecutePreprocessor.record_timing=False \
	    "$$nb" || exit 1; \
	done

lab: $(STAMP)
	$(BIN)/jupyter lab chapters/

lint: $(STAMP)
	$(BIN)/ruff check lib tests bench tools
	$(BIN)/ruff format --check lib tests bench tools

browser-deps:
	@bash tools/ensure-chromium
	@bash tools/ensure-axe

# The unit tier: fast library tests, no processes, no notebooks (tests/unit).
test-fast: $(STAMP)
	$(BIN)/python -m pytest $(XDIST) tests/unit

# The integration tier: CPU processes (scaleout.dist, torchrun, the demos) and the fuzzer.
test-integration: $(STAMP)
	$(BIN)/python -m pytest tests/integration

# Every chapter executed once under strict nbval (the committed outputs must come back), and
# the static checks of tests/book (chapter layout, check cells).
test-notebooks: $(STAMP)
	$(BIN)/python -m pytest $(XDIST) $(NBVAL) -m "not browser" chapters tests/book

# The browser tests of tests/book: the site `make site` built, and JupyterLab (which opens
# every chapter as committed, and runs four cells of chapter 1 live: an explorer, a
# distributed cell).
test-browser: $(STAMP) browser-deps
	$(BIN)/python -m pytest -m browser tests/book

# The one test command (README, CI). Each step stops `make` (and CI) when it fails; each chapter
# is executed twice (nbval, then nbval on numpy's baseline SIMD paths), never by the build.
test: $(STAMP) browser-deps lint
	$(BIN)/python -m pytest $(XDIST) tests/unit
	$(BIN)/python -m pytest tests/integration
	$(MAKE) --no-print-directory test-notebooks
	$(MAKE) --no-print-directory test-baseline
	$(MAKE) --no-print-directory site
	$(MAKE) --no-print-directory test-browser

# The committed outputs must not depend on the CPU: numpy's SIMD paths (AVX-512, AVX2, ...)
# differ in the last bit of exp/log/power. NPY_DISABLE_CPU_FEATURES turns them all off.
test-baseline: $(STAMP)
	export NPY_DISABLE_CPU_FEATURES="$$($(BIN)/python tools/numpy_dispatch.py)" && \
	  $(BIN)/python tools/numpy_dispatch.py --check && \
	  $(BIN)/python -m pytest $(XDIST) $(NBVAL) chapters

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python "$$b" || exit 1; done
