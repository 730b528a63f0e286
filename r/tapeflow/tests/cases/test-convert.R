# shape(), conversions between R and tensors, dim(), length() and `[`.

dtype_name <- function(x) reticulate::py_str(reticulate::py_get_attr(x, "dtype"))

test_that("shape() gives Python integers", {
  s <- shape(2, 2)
  expect_s3_class(s, "python.builtin.tuple")
  expect_identical(reticulate::py_str(s), "(2, 2)")
  expect_identical(reticulate::py_to_r(s), list(2L, 2L))
  expect_identical(reticulate::py_str(shape()), "()")
  expect_identical(reticulate::py_str(shape(3)), "(3,)")
  expect_identical(reticulate::py_str(shape(NULL, 3)), "(None, 3)")
  expect_identical(reticulate::py_str(shape(NA, 3L)), "(None, 3)")
  expect_identical(reticulate::py_str(shape(c(2, 3), 4)), "(2, 3, 4)")
  expect_error(shape(2.5), "whole numbers")
  expect_error(shape(-1), "non-negative")
  expect_error(shape("a"), "numbers")
})

test_that("tf$ones(shape(...)) and dim()", {
  x <- tf$ones(shape(2, 3))
  expect_identical(dim(x), c(2L, 3L))
  expect_identical(length(x), 6L)
  expect_identical(dim(tf$constant(3)), integer(0))
  expect_identical(length(tf$constant(3)), 1L)
  expect_identical(dim(tf$constant(c(1, 2, 3))), 3L)
  expect_identical(dtype_name(x), "float32")
})

test_that("R doubles become float32 as in TF R", {
  expect_identical(dtype_name(tf$constant(3)), "float32")
  expect_identical(dtype_name(tf$constant(c(1, 2))), "float32")
  expect_identical(dtype_name(tf$Variable(1.0)), "float32")
  expect_identical(dtype_name(tf$constant(3L)), "int32")
  expect_identical(dtype_name(tf$constant(TRUE)), "bool")
})

test_that("as_tensor() converts R vectors and arrays", {
  m <- matrix(c(1, 2, 3, 4, 5, 6), 2, 3)
  x <- as_tensor(m)
  expect_identical(dim(x), c(2L, 3L))
  expect_equal(as.array(x), m)
  expect_identical(dtype_name(x), "float64") # as NumPy arrays do in TF R
  expect_identical(dtype_name(as_tensor(m, dtype = "float32")), "float32")
  expect_identical(dtype_name(as_tensor(c(1, 2))), "float32")
  a <- array(as.numeric(1:24), c(2, 3, 4))
  expect_equal(as.array(as_tensor(a)), a)
  expect_identical(as.array(as_tensor(matrix(1:4, 2))), matrix(1:4, 2))
  expect_identical(as.array(as_tensor(matrix(c(TRUE, FALSE), 1))), matrix(c(TRUE, FALSE), 1))
  expect_identical(dim(as_tensor(3, shape = c(2, 2))), c(2L, 2L))
})

test_that("R arrays passed straight to tf functions (reticulate's NumPy conversion)", {
  m <- matrix(c(1, 2, 3, 4), 2, 2)
  numpy_ok <- tryCatch({ reticulate::r_to_py(matrix(1, 1, 1)); TRUE }, error = function(e) FALSE)
  if (numpy_ok) {
    x <- tf$constant(m)
    expect_equal(as.array(x), m)
    expect_identical(dtype_name(x), "float64")
  } else {
    # Debian's reticulate cannot convert R arrays for NumPy 2: a clear R error,
    # never a wrong tensor, and as_tensor() is the way that works.
    expect_error(tf$constant(m))
    expect_equal(as.array(as_tensor(m)), m)
    expect_identical(dtype_name(as_tensor(m)), "float64")
  }
})

test_that("as.array, as.numeric, as.integer, as.logical, as.vector", {
  x <- tf$constant(c(1, 2, 3))
  expect_identical(as.numeric(x), c(1, 2, 3))
  expect_identical(as.double(x), c(1, 2, 3))
  expect_identical(as.integer(x), 1:3)
  expect_identical(as.vector(x), c(1, 2, 3))
  expect_identical(as.array(x), array(c(1, 2, 3)))
  expect_identical(as.numeric(tf$constant(8)), 8)
  expect_identical(as.logical(tf$constant(c(1, 2)) > 1), c(FALSE, TRUE))
  # row-major tensors become column-major R arrays with the same elements
  m <- tf$constant(list(c(1, 2, 3), c(4, 5, 6)))
  expect_identical(dim(m), c(2L, 3L))
  expect_identical(as.array(m), matrix(c(1, 2, 3, 4, 5, 6), 2, 3, byrow = TRUE))
  expect_identical(as.matrix(m), matrix(c(1, 2, 3, 4, 5, 6), 2, 3, byrow = TRUE))
  expect_identical(as.numeric(tf$Variable(2.5)), 2.5)
})

test_that("`[` indexes 1-based, with R ranges and empty indices", {
  m <- as_tensor(matrix(c(1, 2, 3, 4, 5, 6), 2, 3))  # [[1 3 5] [2 4 6]]
  expect_s3_class(m[1, ], "tapeflow.tensor")
  expect_identical(as.numeric(m[1, ]), c(1, 3, 5))
  expect_identical(as.numeric(m[, 2]), c(3, 4))
  expect_identical(as.numeric(m[2, 3]), 6)
  expect_identical(dim(m[2, 3]), integer(0))
  expect_identical(as.array(m[1:2, 2:3]), matrix(c(3, 4, 5, 6), 2, 2))
  expect_identical(dim(m[2, , drop = FALSE]), c(1L, 3L))
  expect_identical(as.numeric(m[1, 3:1]), c(5, 3, 1))
  expect_identical(as.array(m[, c(3, 1)]), matrix(c(5, 6, 1, 2), 2, 2))
  expect_identical(as.numeric(m[2]), c(2, 4, 6))
  expect_identical(as.numeric(m[all_dims(), 1]), c(1, 2))
  v <- tf$constant(c(10, 20, 30))
  expect_identical(as.numeric(v[c(TRUE, FALSE, TRUE)]), c(10, 30))
  expect_error(m[0, 1], "1-based")
  expect_error(m[1.5, 1], "whole numbers")
})

test_that("`[` is recorded by the tape", {
  x <- tf$constant(c(1, 2, 3))
  with(tf$GradientTape() %as% tape, {
    tape$watch(x)
    y <- x[2] * x[3]
  })
  expect_equal(as.numeric(tape$gradient(y, x)), c(0, 3, 2))
})
