# Everything the tests need is installed here: a fresh clone runs `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

include r/test-r.mk
.DEFAULT_GOAL := test

.PHONY: install test test-numpy test-python demo bench bench-gpu fuzz fuzz-libraries clean autograd-suite autograd-examples rule-grid

install: $(STAMP)

# Numba (extra `numba`, the native path) only where pip can add it beside the NumPy
# installed, pinned on the same command line: elsewhere its tests are skipped, said so.
with_numba = $(1) -m pip install --quiet -e '.[numba]' "numpy==$$($(1) -c 'import numpy; print(numpy.__version__)')" || \
	echo "make: Numba cannot be installed beside this NumPy: the native path's tests will be skipped"

$(STAMP): pyproject.toml
	@echo 'make: creating $(VENV) and installing tapeflow with its test dependencies (pytest, hypothesis, scipy, dask, array-api-strict, numba); about 30 s the first time'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	$(call with_numba,$(PY))
	touch $(STAMP)

test: install
	$(PY) -m pytest tests

# python$(1) on the PATH, else pyenv's newest $(1), else nothing.
find_python = $(shell command -v python$(1) >/dev/null && python$(1) -c '' 2>/dev/null && echo python$(1) || \
	PYENV_VERSION=$$(pyenv latest $(1) 2>/dev/null) python$(1) -c 'import sys; print(sys.executable)' 2>/dev/null)
PYTHON310 ?= $(call find_python,3.10)
PYTHON312 ?= $(call find_python,3.12)
PYTHON313 ?= $(call find_python,3.13)

# The oldest and the newest NumPy tapeflow supports, each in a venv of its own:
# NumPy 2.2 on $(PYTHON), and the newest NumPy on Python 3.12 (NumPy 2.5 needs
# Python >= 3.12), newest when its venv is made (again when pyproject.toml changes).
# And the oldest and the newest Python: 3.10 with NumPy 2.2, 3.13 with the newest.
NUMPY_VENVS := .venv-numpy-oldest .venv-numpy-newest
PYTHON_VENVS := .venv-python-oldest .venv-python-newest

.venv-numpy-oldest/.installed: VENV_PYTHON = $(PYTHON)
.venv-numpy-oldest/.installed: NUMPY = 'numpy==2.2.*'
.venv-numpy-newest/.installed: VENV_PYTHON = $(PYTHON312)
.venv-numpy-newest/.installed: NUMPY = --upgrade numpy
.venv-python-oldest/.installed: VENV_PYTHON = $(PYTHON310)
.venv-python-oldest/.installed: NUMPY = 'numpy==2.2.*'
.venv-python-newest/.installed: VENV_PYTHON = $(PYTHON313)
.venv-python-newest/.installed: NUMPY = --upgrade numpy

define make_venv
	@test -n '$(VENV_PYTHON)' || { echo 'make: no Python found for $(@D): set PYTHON310, PYTHON312 or PYTHON313'; exit 1; }
	$(VENV_PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install --quiet --upgrade pip
	$(@D)/bin/python -m pip install --quiet -e '.[dev]' $(NUMPY)
	$(call with_numba,$(@D)/bin/python)
	touch $@
endef

.venv-numpy-%/.installed: pyproject.toml
	$(make_venv)

.venv-python-%/.installed: pyproject.toml
	$(make_venv)

# the suite in each venv of $(1), each saying which Python and NumPy it has
test_in = for venv in $(1); do \
	  $$venv/bin/python -c 'import sys, numpy; print(f"$@: Python {sys.version.split()[0]}, NumPy {numpy.__version__}")' && \
	  $$venv/bin/python -m pytest tests || exit 1; \
	done

test-numpy: $(NUMPY_VENVS:%=%/.installed)
	$(call test_in,$(NUMPY_VENVS))

test-python: $(PYTHON_VENVS:%=%/.installed)
	$(call test_in,$(PYTHON_VENVS))

# The demo fits a simulated pendulum to measurements and times the gradient
# beside autograd (installed here, extra `demo`) and JAX (when installed).
DEMO_STAMP := $(VENV)/.installed-demo

$(DEMO_STAMP): $(STAMP)
	@echo 'make demo: installing autograd, which the demo times tapeflow against'
	$(PY) -m pip install --quiet -e '.[demo]' && touch $(DEMO_STAMP) || \
		echo 'make demo: autograd could not be installed; the demo will skip it'

demo: install $(DEMO_STAMP)
	$(PY) examples/demo.py

# The rule grid, whole: every rule through the compiler to second order in both modes
# (third for elementwise ones), real and complex. `make test` runs every eighth entry.
rule-grid: install
	TAPEFLOW_RULE_GRID=all $(PY) -m pytest tests/rules/test_rule_grid.py

# The mutation fuzzer: COUNT random programs with aliases, views and in-place
# writes, checked against finite differences; reproducers of failures in FUZZ_OUT
# (the first SHRINK of them also shrunk to a small program).
SEED     ?= 0
COUNT    ?= 2000
SHRINK   ?= 10
FUZZ_OUT ?= build/fuzz

fuzz: install
	$(PY) -m tests.fuzz.run --seed $(SEED) --count $(COUNT) --shrink $(SHRINK) --out $(FUZZ_OUT)

# The same programs on Dask arrays and on the CuPy stand-in (tests/fuzz/libraries.py)
fuzz-libraries: install
	$(PY) -m tests.fuzz.libraries --library dask --seed $(SEED) --count $(COUNT)
	$(PY) -m tests.fuzz.libraries --library duck --seed $(SEED) --count $(COUNT)

# autograd and JAX give the benchmarks their comparison columns (torch too, when
# installed by hand); without them (no index reachable) those columns read n/a
# and the rest still runs.
BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): $(STAMP)
	@echo 'make bench: installing autograd and JAX, the comparison columns'
	$(PY) -m pip install --quiet -e '.[bench]' && touch $(BENCH_STAMP) || \
		echo 'make bench: autograd/jax not installed; their columns will read n/a'
	$(call with_numba,$(PY))

bench: install $(BENCH_STAMP)
	$(PY) benchmarks/run.py

# On a machine with a CUDA GPU and CuPy (pip install -e '.[cupy]'), torch and JAX:
# W3, W4 and W6 on the GPU, side by side. Elsewhere it says there is nothing to time.
bench-gpu: install
	$(PY) benchmarks/gpu.py

# autograd's own test suite against tapeflow (a measurement: clones HIPS/autograd into
# .cache/ the first time; AUTOGRAD=path reads a checkout of yours). About 15 minutes.
# Writes the section of docs/numpy-support.md that lists what did not pass.
autograd-suite: install
	$(PY) benchmarks/autograd_suite/run.py $(if $(AUTOGRAD),--autograd $(AUTOGRAD)) \
		--markdown benchmarks/autograd_suite/RESULTS.md
	PYTHONPATH=src $(PY) -m tapeflow.rules.coverage

# autograd's example programs, run on tapeflow with only their imports swapped, their
# gradients compared with autograd's own run of them (a measurement; the same clone).
autograd-examples: install $(DEMO_STAMP)
	$(PY) benchmarks/autograd_examples/run.py $(if $(AUTOGRAD),--autograd $(AUTOGRAD))

clean: clean-r
	rm -rf $(VENV) $(NUMPY_VENVS) $(PYTHON_VENVS) build src/*.egg-info
