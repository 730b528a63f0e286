# The R front end (r/tapeflow) and its tests. Included from the top Makefile:
#
#   include r/test-r.mk
#
# `make test-r` installs what is missing and runs the R tests:
#   - R and reticulate from Debian (r-base-core, r-cran-reticulate, with
#     --no-install-recommends: the recommends pull in hundreds of packages);
#   - the R package r/tapeflow into r/lib (gitignored), reinstalled when one of
#     its files changes;
#   - the tests in r/tapeflow/tests run with reticulate pointed at the
#     project's venv (made by the top Makefile's `install` target).
# The last line printed is "N passed, M failed"; any failure exits non-zero.

R_PKG       := r/tapeflow
R_LIB       := r/lib
R_STAMP     := $(R_LIB)/tapeflow/DESCRIPTION
R_PKG_FILES := $(shell find $(R_PKG) -type f -not -path '$(R_PKG)/tests/*' -not -name '*.pyc' 2>/dev/null)
# The Python that reticulate uses: the top Makefile's venv interpreter.
R_PYTHON     = $(abspath $(or $(PY),.venv/bin/python))
R_APT        = $(if $(filter 0,$(shell id -u)),,sudo) env DEBIAN_FRONTEND=noninteractive apt-get
R_TEST_ARGS ?=

.PHONY: test-r r-deps r-install clean-r

# R and reticulate, from Debian, only when missing.
r-deps:
	@if command -v Rscript >/dev/null 2>&1 && \
	    Rscript -e 'quit(status = !nzchar(system.file(package = "reticulate")))' >/dev/null 2>&1; then \
	  :; \
	else \
	  echo "test-r: installing r-base-core and r-cran-reticulate from Debian"; \
	  $(R_APT) update -qq && \
	  $(R_APT) install -y -qq --no-install-recommends r-base-core r-cran-reticulate >/dev/null && \
	  Rscript -e 'cat("test-r:", R.version.string, "with reticulate", format(packageVersion("reticulate")), "\n")'; \
	fi

r-install: $(R_STAMP)

$(R_STAMP): $(R_PKG_FILES) | r-deps
	@mkdir -p $(R_LIB)
	R CMD INSTALL --no-multiarch --library=$(R_LIB) $(R_PKG)

test-r: install r-deps $(R_STAMP)
	cd $(R_PKG)/tests && \
	  R_LIBS="$(abspath $(R_LIB))" RETICULATE_PYTHON="$(R_PYTHON)" \
	  Rscript --no-save --no-restore run-tests.R $(R_TEST_ARGS)

clean-r:
	rm -rf $(R_LIB)
