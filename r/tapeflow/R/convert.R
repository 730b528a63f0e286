#' Convert an R value to a tapeflow tensor
#'
#' As in the tensorflow R package: R numbers and vectors become tensors as
#' Python floats and lists do (doubles become float32), R arrays and matrices
#' as NumPy arrays do (doubles stay float64), unless `dtype` is given.
#' Python objects (tensors, NumPy arrays) go through `tf$convert_to_tensor`.
#'
#' R arrays are moved to Python by tapeflow itself, so this works with every
#' reticulate and NumPy (reticulate before 1.36 cannot convert R arrays when
#' Python has NumPy 2).
#'
#' @param x an R vector or array, or a Python object
#' @param dtype a dtype (a NumPy dtype, or its name such as `"float32"`)
#' @param ... unused
#' @param shape optional shape, see [shape()]
#' @return a tapeflow Tensor
#' @export
as_tensor <- function(x, dtype = NULL, ..., shape = NULL) {
  if (!is.null(shape) && !inherits(shape, "python.builtin.object")) {
    shape <- do.call(tapeflow::shape, as.list(shape))
  }
  if (inherits(x, "python.builtin.object")) {
    if (is.null(shape)) return(tf$convert_to_tensor(x, dtype = dtype))
    return(tf$constant(x, dtype = dtype, shape = shape))
  }
  if (!is.null(dim(x))) {
    if (!(is.double(x) || is.integer(x) || is.logical(x))) {
      stop("as_tensor(): cannot convert an R array of type ", typeof(x), call. = FALSE)
    }
    x <- r_array_to_py(x, dtype)
  }
  tf$constant(x, dtype = dtype, shape = shape)
}

# An R array as a NumPy array (a Python object), without reticulate's NumPy
# conversion.
r_array_to_py <- function(x, dtype = NULL) {
  dims <- dim(x)
  values <- as.vector(x)
  attributes(values) <- NULL
  py_helpers()$from_r(values, as.list(as.integer(dims)), storage.mode(x),
                      dtype = dtype)
}
