# Scale Out: build the book and run every test. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NB ?= chapters/01_collectives.ipynb
JB_FLAGS := --warningiserror --nitpick --keep-going
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

.PHONY: help setup book book-clean clean page outputs lab lint test test-fast test-baseline browser-deps bench

help:
	@echo "make book        build the whole book to _build/html (sets everything up on first use)"
	@echo "make test        every test: lint, library, launcher, torchrun, nbval, clean build, browser"
	@echo "make test-fast   library, launcher and torchrun tests only (no book build, no browser)"
	@echo "make test-baseline  the notebook tests with numpy on its baseline SIMD paths only"
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

# What CI builds: no cache, so the first build's warnings cannot hide.
book-clean: clean book

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

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not browser" tests

# The one test command (README, CI): lint, a clean warnings-as-errors build, every test, then
# the notebooks once more with numpy restricted to its baseline SIMD paths (as on another CPU).
test: $(STAMP) browser-deps lint book-clean
	$(BIN)/python -m pytest $(NBVAL) tests chapters
	$(MAKE) --no-print-directory test-baseline

# The committed outputs must not depend on the CPU: numpy's SIMD paths (AVX-512, AVX2, ...)
# differ in the last bit of exp/log/power. NPY_DISABLE_CPU_FEATURES turns them all off.
test-baseline: $(STAMP)
	export NPY_DISABLE_CPU_FEATURES="$$($(BIN)/python tools/numpy_dispatch.py)" && \
	  $(BIN)/python tools/numpy_dispatch.py --check && \
	  $(BIN)/python -m pytest $(NBVAL) chapters

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python "$$b" || exit 1; done
