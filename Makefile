# `make test` and `make demo` work on a fresh machine with only Python: they build .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test test-thorough demo bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[test,examples]'
	touch $(STAMP)

# one worker per core (pytest-xdist): the suite is CPU-bound Python
test: $(STAMP)
	$(PY) -m pytest -q -n auto --durations=15 tests

test-thorough: $(STAMP)
	HYPOTHESIS_PROFILE=thorough $(PY) -m pytest -q -n auto tests

demo: $(STAMP)
	$(PY) examples/quickstart.py

bench: $(STAMP)
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
