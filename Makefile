# `make test` and `make demo` work on a fresh machine with only Python: they build .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test test-thorough demo bench clean

# --no-compile: pip would byte-compile every installed module (~16 CPU s, mostly packages the
# tests never import), into __pycache__ folders `make test` never reads (PYTHONPYCACHEPREFIX).
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile -e '.[test,examples]'
	touch $(STAMP)

# one worker per core (pytest-xdist), each taking whole files: the suite is CPU-bound Python,
# and tests drawing from a module-level RNG see the same draws as in one process. Files are
# queued heaviest first (tests/conftest.py), not by test count.
# Bytecode goes to one cache in the venv even where PYTHONDONTWRITEBYTECODE is set: the tests
# start dozens of Python subprocesses (examples, launchers), each otherwise compiling secant afresh.
PYTEST := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(abspath $(VENV))/pycache \
	$(PY) -m pytest -q -n auto --dist loadfile --no-loadscope-reorder

test: $(STAMP)
	$(PYTEST) --durations=15 tests

test-thorough: $(STAMP)
	HYPOTHESIS_PROFILE=thorough $(PYTEST) tests

demo: $(STAMP)
	$(PY) examples/quickstart.py

bench: $(STAMP)
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
