# The two commands a fresh machine needs:
#   make demo   creates the environment, installs ripple alone and decodes the bundled example stream
#   make test   installs everything the tests need (Debian packages too) and runs them all
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo examples test test-pure lint bench bench-memory bench-deps bench-spark system-deps npm-peers clean

# setup.py and the C sources: reinstalling rebuilds the C extensions.
#
# constraints.txt pins every Python package the tests install, at the
# versions CI ran (hypothesis, say, draws other examples in another version),
# so that a fresh machine installs the same.  To refresh it on purpose (new
# dependencies in pyproject.toml, or newer versions), in a fresh environment
# without the constraints, then run `make test` before committing it:
#   rm -rf .venv && python3 -m venv .venv && .venv/bin/pip install --upgrade pip
#   .venv/bin/pip install -e '.[test]'
#   .venv/bin/pip freeze --exclude-editable | grep -v '^ripple-cli' > constraints.txt
# (keeping its two comment lines at the top).
SOURCES := pyproject.toml setup.py constraints.txt $(wildcard ripple_cli/codec/fast/*.c ripple_cli/codec/fast/*.h ripple_cli/tap/*.c)
DEMO_STAMP := $(VENV)/.installed-demo

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The demo needs ripple alone: no test extra (PySpark, pandas, mypy...).
$(DEMO_STAMP): $(SOURCES) | $(VENV)/bin/python
	$(BIN)/pip install -q -c constraints.txt -e .
	touch $(DEMO_STAMP)

# The tests need the test extra; it includes what the demo installs.
$(STAMP): $(SOURCES) | $(VENV)/bin/python
	$(BIN)/pip install -q -c constraints.txt -e '.[test]'
	touch $(STAMP) $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	@echo '$$ ripple decode --format table -c 12 examples/demo.ripple'
	@$(BIN)/ripple decode --format table -c 12 examples/demo.ripple
	@echo
	@echo '$$ ripple decode -c 3 examples/demo.ripple'
	@$(BIN)/ripple decode -c 3 examples/demo.ripple
	@echo
	@echo '$$ ripple verify --schemas examples/more-schemas examples/demo.ripple'
	@$(BIN)/ripple verify --schemas examples/more-schemas examples/demo.ripple

# The inputs README.md and the man pages use (examples/), remade byte for
# byte by the project's own generators; tests/docs checks they are current.
examples: $(STAMP)
	$(BIN)/python scripts/make-examples.py

system-deps:
	./scripts/system-deps.sh

# The real Lumberjack writers (npm) the protocol tests run.
npm-peers:
	./scripts/npm-peers.sh

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The whole suite, then again without the C extensions (RIPPLE_PURE=1: the
# pure-Python codec) over every suite that decodes: what they print must not
# differ.  The second pass leaves out the tests that start Spark's JVM (marked
# `jvm`: the Spark session, the standalone cluster, runs given --master):
# they would cost `make test` a quarter of an hour more, and the rows their
# executors build are the in-process row builder's, which the second pass
# runs (tests/batch without `jvm`, and tests/cli/test_fast_and_pure.py
# compares export's rows, typed tables and stats across the lanes).
# tests/hostile runs each of its inputs in both lanes itself; tests/golden
# holds only the files those suites compare with; tests/docs and
# tests/wireshark run the commands as a user types them (the C lane), and
# tests/test_man_pages.py decodes nothing.
PURE_SUITES := tests/unit tests/property tests/cli tests/capture tests/protocols tests/interop tests/tap tests/replay tests/batch
PURE_ONLY := -m "not jvm"

# Two processes (pytest-xdist): most tests wait on subprocesses, sockets and
# JVMs; what shares a server stays in one process (tests/conftest.py).
XDIST := -n 2

test: $(STAMP) system-deps npm-peers lint
	$(BIN)/python -m pytest -q $(XDIST)
	RIPPLE_PURE=1 $(BIN)/python -m pytest -q $(XDIST) $(PURE_ONLY) $(PURE_SUITES)

# Only the pure-Python lane.
test-pure: $(STAMP)
	RIPPLE_PURE=1 $(BIN)/python -m pytest -q $(XDIST) $(PURE_ONLY) $(PURE_SUITES)

# ripple against OCaml, tshark and socat on generated inputs (cached in .bench/);
# a few minutes.  bench-memory: peak RSS on a 10 GB stream (generated, then
# deleted: about 10 GB of disk and five minutes), kept out of `make bench`.
# BENCH_ARGS passes options on, e.g. make bench BENCH_ARGS="--repeat 3".
bench: $(STAMP) system-deps bench-deps
	$(BIN)/python bench/bench.py $(BENCH_ARGS)

bench-memory: $(STAMP) system-deps
	$(BIN)/python bench/bench.py --only memory --big

bench-deps:
	./scripts/bench-deps.sh

# The Spark pipeline on a generated stream of at least 1 GB (cached in .bench/):
# in-process decode, local[1], local[2] and a two-worker standalone cluster
# (started for the run) side by side.
bench-spark: $(STAMP) system-deps
	$(BIN)/python bench/bench_spark.py

# Every extension setup.py builds in place (the codec's and the tap relay's).
clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .bench build
	find ripple_cli -name '*.so' -delete
