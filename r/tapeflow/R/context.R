#' Name the value of a context manager in `with()`
#'
#' `with(tf$GradientTape() %as% t, { ... })` is R's spelling of Python's
#' `with tf.GradientTape() as t: ...`: the context is entered, `t` is bound
#' (in the environment that called `with()`) to what `__enter__` returned,
#' the block runs in that same environment, and the context is exited however
#' the block ends.
#'
#' @param object a Python context manager (a `GradientTape`, ...)
#' @param name the name to bind, unquoted
#' @return `object`, marked with the name to bind
#' @export
`%as%` <- function(object, name) {
  as <- gsub("\"", "", deparse(substitute(name)), fixed = TRUE)
  attr(object, "as") <- as
  attr(object, "as_envir") <- parent.frame()
  object
}

#' Run a block of R code inside a tapeflow context manager
#'
#' @param data a tapeflow context manager, optionally named with `%as%`
#' @param expr the block to run (it runs in the calling environment)
#' @param as the name to bind, as an alternative to `%as%`
#' @param ... unused
#' @return the value of `expr`, invisibly
#' @export
with.tapeflow.object <- function(data, expr, as = NULL, ...) {
  if (!missing(as)) {
    as <- gsub("\"", "", deparse(substitute(as)), fixed = TRUE)
    envir <- parent.frame()
  } else {
    as <- attr(data, "as", exact = TRUE)
    envir <- attr(data, "as_envir", exact = TRUE)
    if (is.null(envir)) envir <- parent.frame()
  }
  # The marks live on the (shared) Python object: use them once.
  attr(data, "as") <- NULL
  attr(data, "as_envir") <- NULL

  context <- data$`__enter__`()
  if (!is.null(as)) assign(as, context, envir = envir)

  done <- FALSE
  on.exit(if (!done) context_exit_with_error(data, "R evaluation was interrupted"))
  value <- withCallingHandlers(
    force(expr),
    error = function(e) {
      done <<- TRUE
      context_exit_with_error(data, conditionMessage(e))
    }
  )
  done <- TRUE
  data$`__exit__`(NULL, NULL, NULL)
  invisible(value)
}

# Leave a context because the R block failed: `__exit__` gets an exception (a
# RuntimeError carrying the R message) so that the Python side knows the block
# did not complete; the R error then goes on unchanged.
context_exit_with_error <- function(data, message) {
  builtins <- reticulate::import_builtins(convert = FALSE)
  exc <- builtins$RuntimeError(message)
  try(data$`__exit__`(builtins$RuntimeError, exc, NULL), silent = TRUE)
  invisible()
}
