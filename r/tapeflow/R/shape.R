#' Tensor shapes
#'
#' `shape(2, 2)` is the shape of a 2 x 2 tensor, as in the tensorflow R
#' package: R numbers are doubles, but dimensions must reach Python as
#' integers, so `shape()` converts each whole number to an integer. `NULL` or
#' `NA` stands for an unknown dimension (Python `None`); `shape()` with no
#' argument is the shape of a scalar.
#'
#' @param ... dimensions: whole numbers, `NULL` or `NA`; vectors are spliced
#' @return a Python tuple of integers
#' @examples
#' \dontrun{
#' tf$ones(shape(2, 2))
#' }
#' @export
shape <- function(...) {
  dims <- list()
  for (value in list(...)) {
    if (is.null(value)) {
      dims[length(dims) + 1L] <- list(NULL)
      next
    }
    if (inherits(value, "python.builtin.object")) {
      value <- reticulate::py_to_r(value)
    }
    if (is.list(value)) value <- unlist(value)
    if (is.logical(value) && all(is.na(value))) value <- as.numeric(value)
    if (!is.numeric(value)) {
      stop("shape(): dimensions must be numbers, NULL or NA, not ",
           class(value)[1], call. = FALSE)
    }
    for (d in as.list(value)) {
      if (is.na(d)) {
        dims[length(dims) + 1L] <- list(NULL)
      } else if (d != trunc(d) || d < 0 || d > .Machine$integer.max) {
        stop("shape(): dimensions must be non-negative whole numbers, got ",
             format(d), call. = FALSE)
      } else {
        dims[[length(dims) + 1L]] <- as.integer(d)
      }
    }
  }
  reticulate::tuple(dims)
}

#' All remaining dimensions in `[`
#'
#' `x[all_dims(), 1]` is Python's `x[..., 0]`.
#'
#' @return Python's `Ellipsis`
#' @export
all_dims <- function() {
  reticulate::import_builtins(convert = FALSE)$Ellipsis
}
