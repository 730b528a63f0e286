#' The tapeflow Python module
#'
#' `tf` is the `tapeflow` Python module seen through reticulate: write
#' `tf$GradientTape()`, `tf$ones(shape(2, 2))`, `tf$Variable(1.0)` as with the
#' tensorflow R package. The module is imported lazily, on first use, from the
#' Python that reticulate selects (set `RETICULATE_PYTHON` to a Python where
#' `tapeflow` is installed).
#'
#' @export
tf <- NULL

# Package state: the fully qualified class names of tapeflow's Tensor and
# Variable, filled in when the Python module is loaded.
.tapeflow <- new.env(parent = emptyenv())
.tapeflow$tensor_classes <- character()

.onLoad <- function(libname, pkgname) {
  tf <<- reticulate::import(
    "tapeflow",
    delay_load = list(
      priority = 10,
      on_load = tapeflow_on_load,
      on_error = tapeflow_on_error
    )
  )
  reticulate::register_class_filter(tapeflow_class_filter)
  invisible()
}

# Called by reticulate right after `import tapeflow` succeeded.
tapeflow_on_load <- function() {
  names <- character()
  for (what in c("Tensor", "Variable")) {
    cls <- tryCatch(reticulate::py_get_attr(tf, what), error = function(e) NULL)
    if (!is.null(cls)) {
      module <- reticulate::py_to_r(reticulate::py_get_attr(cls, "__module__"))
      name <- reticulate::py_to_r(reticulate::py_get_attr(cls, "__name__"))
      names <- c(names, paste(module, name, sep = "."))
    }
  }
  .tapeflow$tensor_classes <- names
  invisible()
}

tapeflow_on_error <- function(e) {
  python <- tryCatch(reticulate::py_config()$python, error = function(e2) "?")
  stop(
    "could not import the Python package 'tapeflow' (Python: ", python, "): ",
    conditionMessage(e),
    "\nSet RETICULATE_PYTHON to a Python where tapeflow is installed ",
    "(for a checkout: `make install`, then RETICULATE_PYTHON=<checkout>/.venv/bin/python).",
    call. = FALSE
  )
}

# reticulate computes an R class vector for every Python object it wraps: the
# fully qualified names of the classes in its MRO, then "python.builtin.object".
# Tensors and Variables get "tapeflow.tensor" in front (the class our S3
# methods are written for); every other tapeflow object (a GradientTape, ...)
# gets "tapeflow.object", whose `with()` method runs the context manager.
tapeflow_class_filter <- function(classes) {
  if (!any(startsWith(classes, "tapeflow."))) {
    return(classes)
  }
  if (tapeflow_is_tensor_class(classes)) {
    c("tapeflow.tensor", "tapeflow.object", classes)
  } else {
    c("tapeflow.object", classes)
  }
}

tapeflow_is_tensor_class <- function(classes) {
  known <- .tapeflow$tensor_classes
  if (length(known)) {
    return(any(classes %in% known))
  }
  # Before the module finished loading: recognise the classes by name.
  any(grepl("^tapeflow\\.([A-Za-z0-9_]+\\.)*(Tensor|Variable)$", classes))
}

#' Is this a tapeflow Tensor or Variable?
#'
#' @param x any R value
#' @return `TRUE` or `FALSE`
#' @export
is_tensor <- function(x) inherits(x, "tapeflow.tensor")
