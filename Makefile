# Everything the tests need is installed here: a fresh clone runs `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

include r/test-r.mk
.DEFAULT_GOAL := test

.PHONY: install test demo bench fuzz clean

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

# The mutation fuzzer: COUNT random programs with aliases, views and in-place
# writes, checked against finite differences; reproducers of failures in FUZZ_OUT
# (the first SHRINK of them also shrunk to a small program).
SEED     ?= 0
COUNT    ?= 2000
SHRINK   ?= 10
FUZZ_OUT ?= build/fuzz

fuzz: install
	$(PY) -m tests.fuzz.run --seed $(SEED) --count $(COUNT) --shrink $(SHRINK) --out $(FUZZ_OUT)

# autograd and JAX give the benchmarks their comparison columns; without them
# (no index reachable) those columns read n/a and the rest still runs.
BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]' && touch $(BENCH_STAMP) || \
		echo 'make bench: autograd/jax not installed; their columns will read n/a'

bench: install $(BENCH_STAMP)
	$(PY) benchmarks/run.py

clean: clean-r
	rm -rf $(VENV) build src/*.egg-info
