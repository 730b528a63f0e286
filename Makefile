# Everything the tests need is installed here: a fresh clone runs `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

include r/test-r.mk
.DEFAULT_GOAL := test

.PHONY: install test demo bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

test: install
	$(PY) -m pytest tests

demo: install
	$(PY) examples/logistic_regression.py

bench: install
	$(PY) benchmarks/run.py

clean: clean-r
	rm -rf $(VENV) build src/*.egg-info
