# S3 methods for tapeflow Tensors and Variables (R class "tapeflow.tensor",
# added by the class filter in package.R).

# Python modules used below, imported on first use.
py_builtins <- function() reticulate::import_builtins(convert = FALSE)
py_operator <- function() reticulate::import("operator", convert = TRUE)
py_numpy <- function() reticulate::import("numpy", convert = TRUE)
py_helpers <- function() {
  if (is.null(.tapeflow$helpers)) {
    .tapeflow$helpers <- reticulate::import_from_path(
      "tapeflow_r", system.file("python", package = "tapeflow"), convert = FALSE)
  }
  .tapeflow$helpers
}

tf_has <- function(name) {
  reticulate::py_has_attr(tf, name)
}

# An R operand meeting a tensor: convert it as the tensorflow R package does,
# to a tensor of the tensor's dtype when that is a float dtype (so `x * 2` and
# `x + matrix(...)` stay float32 when `x` is). Python objects pass through.
as_operand <- function(value, like) {
  if (inherits(value, "python.builtin.object") || is.null(like)) {
    return(value)
  }
  if (!(is.numeric(value) || is.logical(value))) {
    return(value)
  }
  dtype <- reticulate::py_get_attr(like, "dtype")
  kind <- reticulate::py_to_r(reticulate::py_get_attr(dtype, "kind"))
  if (kind %in% c("f", "c")) {
    return(as_tensor(value, dtype = dtype))
  }
  # An integer or boolean tensor: no silent truncation of R doubles; let
  # NumPy's promotion rules decide.
  if (is.null(dim(value))) value else as_tensor(value)
}

# R operator -> (tapeflow function, Python operator-module function).
.binary_ops <- list(
  "+"   = c("add", "add"),
  "-"   = c("subtract", "sub"),
  "*"   = c("multiply", "mul"),
  "/"   = c("divide", "truediv"),
  "^"   = c("pow", "pow"),
  "%%"  = c("floormod", "mod"),
  "%/%" = c("floordiv", "floordiv"),
  "=="  = c("equal", "eq"),
  "!="  = c("not_equal", "ne"),
  "<"   = c("less", "lt"),
  "<="  = c("less_equal", "le"),
  ">"   = c("greater", "gt"),
  ">="  = c("greater_equal", "ge"),
  "&"   = c("logical_and", "and_"),
  "|"   = c("logical_or", "or_")
)

# Prefer the Python operator (the tensor's own __add__/__radd__, ...): it is
# what Python users of tapeflow run, and it is recorded on the tape. The
# tapeflow function of the same meaning is used for comparisons and logical
# operators when it exists, since those read more reliably elementwise.
binary_op <- function(op, e1, e2) {
  names <- .binary_ops[[op]]
  comparison <- op %in% c("==", "!=", "<", "<=", ">", ">=", "&", "|")
  if (comparison && tf_has(names[[1]])) {
    return(tf[[names[[1]]]](e1, e2))
  }
  py_operator()[[names[[2]]]](e1, e2)
}

#' Operators on tapeflow tensors
#'
#' Arithmetic (`+ - * / ^ %% %/%`), comparison (`== != < <= > >=`), logical
#' (`& | !`) and unary (`-x`, `+x`) operators work on Tensors and Variables
#' and are recorded by an active `GradientTape`. An R number on the other side
#' is converted to a tensor of the tensor's dtype.
#'
#' @param e1,e2 operands, at least one a tapeflow tensor
#' @return a tapeflow Tensor
#' @export
Ops.tapeflow.tensor <- function(e1, e2) {
  op <- .Generic
  if (nargs() == 1L) {
    if (op == "-") {
      return(py_operator()$neg(e1))
    }
    if (op == "+") {
      return(py_operator()$pos(e1))
    }
    if (op == "!") {
      if (tf_has("logical_not")) return(tf$logical_not(e1))
      return(py_operator()$invert(e1))
    }
    stop("unary operator `", op, "` is not defined for tapeflow tensors", call. = FALSE)
  }
  if (is.null(.binary_ops[[op]])) {
    stop("operator `", op, "` is not defined for tapeflow tensors", call. = FALSE)
  }
  like <- if (is_tensor(e1)) e1 else e2
  binary_op(op, as_operand(e1, like), as_operand(e2, like))
}

# R Math generic -> tapeflow function name (NumPy's name is the fallback:
# tensors dispatch NumPy ufuncs and record them on the tape).
.math_names <- c(
  ceiling = "ceil", gamma = "gamma", lgamma = "lgamma"
)

#' Math functions on tapeflow tensors
#'
#' `exp(x)`, `log(x)`, `sqrt(x)`, `abs(x)`, `sin(x)`, ... call tapeflow's
#' function of that name (or NumPy's, which dispatches on tensors).
#'
#' @param x a tapeflow tensor
#' @param ... `base` for `log`, `digits` for `round`
#' @return a tapeflow Tensor
#' @export
Math.tapeflow.tensor <- function(x, ...) {
  generic <- .Generic
  name <- if (!is.na(.math_names[generic])) .math_names[[generic]] else generic
  extra <- list(...)
  if (generic == "log" && !is.null(extra$base)) {
    return(tensor_log(x) / log(extra$base))
  }
  if (generic == "round" && !is.null(extra$digits) && extra$digits != 0) {
    stop("round(x, digits) is not supported on tapeflow tensors", call. = FALSE)
  }
  if (tf_has(name)) {
    return(tf[[name]](x))
  }
  np <- py_numpy()
  if (reticulate::py_has_attr(np, name)) {
    return(np[[name]](x))
  }
  stop("`", generic, "()` is not available for tapeflow tensors", call. = FALSE)
}

tensor_log <- function(x) {
  if (tf_has("log")) tf$log(x) else py_numpy()$log(x)
}

#' Print and format tapeflow tensors
#'
#' Tensors print as in Python: `tf.Tensor(8.0, shape=(), dtype=float32)`.
#'
#' @param x a tapeflow tensor
#' @param ... unused
#' @export
format.tapeflow.tensor <- function(x, ...) {
  reticulate::py_str(x)
}

#' @rdname format.tapeflow.tensor
#' @export
print.tapeflow.tensor <- function(x, ...) {
  writeLines(format(x, ...))
  invisible(x)
}

#' @rdname format.tapeflow.tensor
#' @export
as.character.tapeflow.tensor <- function(x, ...) {
  as.character(tensor_value(x))
}

# The tensor's value as an R vector (no dim) or array.
tensor_value <- function(x) {
  parts <- reticulate::py_to_r(py_helpers()$to_r(x))
  dims <- as.integer(unlist(parts[[1]]))
  kind <- parts[[2]]
  values <- parts[[3]]
  if (!length(values)) {
    values <- vector(switch(kind, b = "logical", i = , u = "integer", c = "complex",
                            U = , S = "character", "double"), 0L)
  }
  if (length(dims) <= 1L) {
    return(values)
  }
  array(values, dim = dims)
}

#' Convert tapeflow tensors to R values
#'
#' @param x a tapeflow tensor
#' @param ... unused
#' @param mode as in [as.vector()]
#' @return an R array, vector or number
#' @export
as.array.tapeflow.tensor <- function(x, ...) {
  as.array(tensor_value(x))
}

#' @rdname as.array.tapeflow.tensor
#' @export
as.matrix.tapeflow.tensor <- function(x, ...) {
  as.matrix(tensor_value(x), ...)
}

#' @rdname as.array.tapeflow.tensor
#' @export
as.vector.tapeflow.tensor <- function(x, mode = "any") {
  as.vector(tensor_value(x), mode = mode)
}

#' @rdname as.array.tapeflow.tensor
#' @export
as.double.tapeflow.tensor <- function(x, ...) {
  as.double(tensor_value(x))
}

#' @rdname as.array.tapeflow.tensor
#' @export
as.integer.tapeflow.tensor <- function(x, ...) {
  as.integer(tensor_value(x))
}

#' @rdname as.array.tapeflow.tensor
#' @export
as.logical.tapeflow.tensor <- function(x, ...) {
  as.logical(tensor_value(x))
}

#' Dimensions of a tapeflow tensor
#'
#' @param x a tapeflow tensor
#' @return an integer vector (`integer(0)` for a scalar; `NA` for an unknown
#'   dimension)
#' @export
dim.tapeflow.tensor <- function(x) {
  shape <- reticulate::py_get_attr(x, "shape")
  dims <- reticulate::py_to_r(py_builtins()$tuple(shape))
  vapply(dims, function(d) if (is.null(d)) NA_integer_ else as.integer(d), integer(1))
}

#' @rdname dim.tapeflow.tensor
#' @return `length()`: the number of elements
#' @export
length.tapeflow.tensor <- function(x) {
  as.integer(prod(dim(x)))
}

#' Index tapeflow tensors
#'
#' `x[i, j]` with R's conventions turned into Python's: indices are 1-based,
#' a range `a:b` includes `b`, an empty index takes the whole dimension, and a
#' single index drops its dimension unless `drop = FALSE`. A non-contiguous
#' vector of indices gathers (NumPy advanced indexing); a logical index is a
#' mask; `all_dims()` is Python's `...`; `NULL` inserts a new axis.
#'
#' @param x a tapeflow tensor
#' @param ... indices, one per dimension
#' @param drop drop dimensions indexed by a single number
#' @return a tapeflow Tensor
#' @export
`[.tapeflow.tensor` <- function(x, ..., drop = TRUE) {
  exprs <- as.list(substitute(list(...)))[-1L]
  if (!length(exprs)) {
    return(x)
  }
  envir <- parent.frame()
  key <- lapply(exprs, function(e) {
    if (identical(e, quote(expr = ))) {
      return(py_builtins()$slice(NULL))
    }
    index_to_python(eval(e, envir), drop = drop)
  })
  reticulate::py_get_item(x, reticulate::tuple(key))
}

index_to_python <- function(i, drop) {
  builtins <- py_builtins()
  if (is.null(i)) {
    return(NULL) # Python None: a new axis
  }
  if (inherits(i, "python.builtin.object")) {
    return(i)
  }
  if (is.logical(i)) {
    return(reticulate::r_to_py(as.list(i)))
  }
  if (!is.numeric(i)) {
    stop("tensor indices must be numbers, logicals, NULL or all_dims(), not ",
         class(i)[1], call. = FALSE)
  }
  if (anyNA(i) || any(i != trunc(i))) {
    stop("tensor indices must be whole numbers", call. = FALSE)
  }
  if (any(i < 1)) {
    stop("tensor indices are 1-based and positive; got ",
         paste(i[i < 1], collapse = ", "), call. = FALSE)
  }
  i <- as.integer(i)
  if (length(i) == 1L) {
    if (drop) return(i - 1L)
    return(builtins$slice(i - 1L, i))
  }
  steps <- diff(i)
  if (all(steps == 1L)) {
    return(builtins$slice(i[1] - 1L, i[length(i)]))
  }
  if (all(steps == -1L)) {
    stop_at <- if (i[length(i)] == 1L) NULL else i[length(i)] - 2L
    return(builtins$slice(i[1] - 1L, stop_at, -1L))
  }
  reticulate::r_to_py(as.list(i - 1L))
}
