# A small test runner in base R (testthat pulls in dozens of Debian packages).
#
#   Rscript run-tests.R [PATTERN]     (from r/tapeflow/tests)
#
# Runs every tests/cases/test-*.R file (or those whose name matches PATTERN).
# Each test_that() block is one test; it fails at its first failed
# expectation or error. The last line is "N passed, M failed"; the exit
# status is non-zero when anything failed.

library(tapeflow)

.runner <- new.env()
.runner$passed <- 0L
.runner$failed <- 0L
.runner$skipped <- 0L
.runner$failures <- character()
.runner$file <- ""

expectation_failure <- function(message) {
  structure(class = c("expectation_failure", "error", "condition"),
            list(message = message, call = NULL))
}

fail <- function(...) stop(expectation_failure(paste0(...)))

# Ends the current test as skipped (counted apart, not a failure).
skip <- function(...) {
  stop(structure(class = c("skip_test", "condition"),
                 list(message = paste0(...), call = NULL)))
}

show_value <- function(x) {
  text <- tryCatch(
    paste(utils::capture.output(print(x)), collapse = "\n"),
    error = function(e) paste0("<unprintable: ", conditionMessage(e), ">")
  )
  if (nchar(text) > 400) paste0(substr(text, 1, 400), " ...") else text
}

test_that <- function(description, code) {
  name <- paste0(.runner$file, ": ", description)
  code <- substitute(code)
  env <- new.env(parent = parent.frame())
  started <- proc.time()[["elapsed"]]
  outcome <- tryCatch(
    {
      withCallingHandlers(
        {
          eval(code, env)
          NULL
        },
        warning = function(w) {
          message("    warning in '", description, "': ", conditionMessage(w))
          invokeRestart("muffleWarning")
        }
      )
    },
    skip_test = function(e) structure(conditionMessage(e), class = "skipped"),
    expectation_failure = function(e) conditionMessage(e),
    error = function(e) paste0("error: ", conditionMessage(e))
  )
  took <- proc.time()[["elapsed"]] - started
  if (inherits(outcome, "skipped")) {
    .runner$skipped <- .runner$skipped + 1L
    cat(sprintf("skip  %s: %s\n", name, outcome))
  } else if (is.null(outcome)) {
    .runner$passed <- .runner$passed + 1L
    cat(sprintf("ok    %s (%.2fs)\n", name, took))
  } else {
    .runner$failed <- .runner$failed + 1L
    .runner$failures <- c(.runner$failures, name)
    cat(sprintf("FAIL  %s\n      %s\n", name, gsub("\n", "\n      ", outcome)))
  }
  invisible(is.null(outcome))
}

expect_true <- function(x, info = NULL) {
  label <- deparse(substitute(x))[1]
  if (!isTRUE(x)) fail("expected TRUE: ", label, if (!is.null(info)) paste0(" (", info, ")"),
                       "\n  got: ", show_value(x))
  invisible(x)
}

expect_false <- function(x) {
  label <- deparse(substitute(x))[1]
  if (!isFALSE(x)) fail("expected FALSE: ", label, "\n  got: ", show_value(x))
  invisible(x)
}

expect_equal <- function(actual, expected, tolerance = 1e-6, ...) {
  label <- deparse(substitute(actual))[1]
  same <- all.equal(expected, actual, tolerance = tolerance, ...)
  if (!isTRUE(same)) {
    fail("not equal: ", label, "\n  ", paste(same, collapse = "\n  "),
         "\n  got:      ", show_value(actual),
         "\n  expected: ", show_value(expected))
  }
  invisible(actual)
}

expect_identical <- function(actual, expected) {
  label <- deparse(substitute(actual))[1]
  if (!identical(actual, expected)) {
    fail("not identical: ", label,
         "\n  got:      ", show_value(actual),
         "\n  expected: ", show_value(expected))
  }
  invisible(actual)
}

expect_s3_class <- function(x, class) {
  label <- deparse(substitute(x))[1]
  if (!inherits(x, class)) {
    fail(label, " does not inherit from ", class, "; class: ",
         paste(class(x), collapse = ", "))
  }
  invisible(x)
}

# The expression must signal an error whose message matches `pattern`
# (a regular expression, or a fixed string when fixed = TRUE). Returns the
# condition.
expect_error <- function(expr, pattern = NULL, fixed = FALSE) {
  label <- deparse(substitute(expr))[1]
  cond <- tryCatch({ force(expr); NULL }, error = function(e) e)
  if (is.null(cond)) fail("expected an error from: ", label)
  message <- conditionMessage(cond)
  if (!is.null(pattern) && !grepl(pattern, message, fixed = fixed)) {
    fail("error from ", label, " does not match '", pattern, "':\n  ", message)
  }
  invisible(cond)
}

# What `print(x)` shows, compared with the expected lines exactly.
expect_printed <- function(x, expected) {
  label <- deparse(substitute(x))[1]
  got <- utils::capture.output(print(x))
  expected <- unlist(strsplit(expected, "\n", fixed = TRUE))
  if (!identical(got, expected)) {
    fail("print(", label, ") shows\n", paste(got, collapse = "\n"),
         "\n  expected\n", paste(expected, collapse = "\n"))
  }
  invisible(x)
}

# The output of `expr` (printed, or written with cat) matches `pattern`.
expect_output <- function(expr, pattern, fixed = FALSE) {
  label <- deparse(substitute(expr))[1]
  got <- paste(utils::capture.output(expr), collapse = "\n")
  if (!grepl(pattern, got, fixed = fixed)) {
    fail("output of ", label, " does not match '", pattern, "':\n", got)
  }
  invisible(got)
}

# --- run -------------------------------------------------------------------

args <- commandArgs(trailingOnly = TRUE)
pattern <- if (length(args)) args[[1]] else "."
case_dir <- "cases"
if (!dir.exists(case_dir)) {
  file_arg <- sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE))
  if (length(file_arg)) case_dir <- file.path(dirname(file_arg[[1]]), "cases")
}
files <- sort(list.files(case_dir, pattern = "^test-.*\\.R$", full.names = TRUE))
files <- files[grepl(pattern, basename(files))]
if (!length(files)) stop("no test files found in ", normalizePath(case_dir, mustWork = FALSE))

python <- tryCatch(reticulate::py_config()$python, error = function(e) conditionMessage(e))
cat("tapeflow R tests; R ", as.character(getRversion()),
    ", reticulate ", as.character(utils::packageVersion("reticulate")),
    ", Python ", python, "\n", sep = "")

started <- proc.time()[["elapsed"]]
for (file in files) {
  .runner$file <- sub("\\.R$", "", basename(file))
  outcome <- tryCatch({ sys.source(file, envir = new.env(parent = globalenv())); NULL },
                      error = function(e) conditionMessage(e))
  if (!is.null(outcome)) {
    # An error outside any test_that() block.
    .runner$failed <- .runner$failed + 1L
    .runner$failures <- c(.runner$failures, paste0(.runner$file, " (file)"))
    cat(sprintf("FAIL  %s: error outside a test: %s\n", .runner$file, outcome))
  }
}

cat(sprintf("\n%d tests in %.1fs\n", .runner$passed + .runner$failed + .runner$skipped,
            proc.time()[["elapsed"]] - started))
if (.runner$failed) cat("failed:", paste0("\n  ", .runner$failures), "\n")
cat(sprintf("%d passed, %d failed%s\n", .runner$passed, .runner$failed,
            if (.runner$skipped) sprintf(", %d skipped", .runner$skipped) else ""))
quit(status = if (.runner$failed) 1L else 0L, save = "no")
