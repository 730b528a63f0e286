# R's operators and math functions on tapeflow tensors and variables.

dtype_name <- function(x) reticulate::py_str(reticulate::py_get_attr(x, "dtype"))

test_that("tensors and variables get the tapeflow.tensor class", {
  x <- tf$constant(3)
  v <- tf$Variable(2)
  expect_s3_class(x, "tapeflow.tensor")
  expect_s3_class(v, "tapeflow.tensor")
  expect_s3_class(x, "python.builtin.object")
  expect_true(is_tensor(x))
  expect_true(is_tensor(v))
  expect_false(is_tensor(3))
  expect_s3_class(tf$GradientTape(), "tapeflow.object")
  expect_false(inherits(tf$GradientTape(), "tapeflow.tensor"))
})

test_that("arithmetic between tensors", {
  x <- tf$constant(c(1, 2, 3))
  y <- tf$constant(c(4, 5, 6))
  expect_equal(as.numeric(x + y), c(5, 7, 9))
  expect_equal(as.numeric(y - x), c(3, 3, 3))
  expect_equal(as.numeric(x * y), c(4, 10, 18))
  expect_equal(as.numeric(y / x), c(4, 2.5, 2))
  expect_equal(as.numeric(x ^ y), c(1, 32, 729))
  expect_equal(as.numeric(y %% x), c(0, 1, 0))
  expect_equal(as.numeric(y %/% x), c(4, 2, 2))
  expect_s3_class(x + y, "tapeflow.tensor")
})

test_that("arithmetic with R numbers on either side keeps the tensor's dtype", {
  x <- tf$constant(c(1, 2, 3))
  expect_identical(dtype_name(x), "float32")
  expect_equal(as.numeric(x + 1), c(2, 3, 4))
  expect_equal(as.numeric(1 + x), c(2, 3, 4))
  expect_equal(as.numeric(x - 1), c(0, 1, 2))
  expect_equal(as.numeric(10 - x), c(9, 8, 7))
  expect_equal(as.numeric(2 * x), c(2, 4, 6))
  expect_equal(as.numeric(x / 2), c(0.5, 1, 1.5))
  expect_equal(as.numeric(6 / x), c(6, 3, 2))
  expect_equal(as.numeric(x ^ 2), c(1, 4, 9))
  expect_equal(as.numeric(2 ^ x), c(2, 4, 8))
  expect_equal(as.numeric(x * c(1, 10, 100)), c(1, 20, 300))
  expect_equal(as.numeric(x * 2L), c(2, 4, 6))
  expect_identical(dtype_name(x * 2), "float32")
  expect_identical(dtype_name(2 * x), "float32")
  expect_identical(dtype_name(x * c(1, 10, 100)), "float32")
  expect_identical(dtype_name(x + 2L), "float32")
})

test_that("arithmetic with an R matrix converts it to the tensor's dtype", {
  x <- tf$ones(shape(2, 2))
  m <- matrix(c(1, 2, 3, 4), 2, 2)
  expect_equal(as.array(x + m), m + 1)
  expect_equal(as.array(m * x), m)
  expect_identical(dtype_name(x + m), "float32")
})

test_that("unary minus and plus", {
  x <- tf$constant(c(1, -2))
  expect_equal(as.numeric(-x), c(-1, 2))
  expect_equal(as.numeric(+x), c(1, -2))
  expect_equal(as.numeric(-tf$Variable(3)), -3)
})

test_that("comparisons are elementwise and give logical tensors", {
  x <- tf$constant(c(1, 2, 3))
  expect_identical(as.logical(x > 1), c(FALSE, TRUE, TRUE))
  expect_identical(as.logical(x >= 2), c(FALSE, TRUE, TRUE))
  expect_identical(as.logical(x < 2), c(TRUE, FALSE, FALSE))
  expect_identical(as.logical(x <= 2), c(TRUE, TRUE, FALSE))
  expect_identical(as.logical(x == 2), c(FALSE, TRUE, FALSE))
  expect_identical(as.logical(x != 2), c(TRUE, FALSE, TRUE))
  expect_identical(as.logical(2 < x), c(FALSE, FALSE, TRUE))
  expect_identical(as.logical(x == tf$constant(c(1, 0, 3))), c(TRUE, FALSE, TRUE))
  expect_s3_class(x > 1, "tapeflow.tensor")
  expect_identical(dtype_name(x > 1), "bool")
})

test_that("logical operators on boolean tensors", {
  x <- tf$constant(c(1, 2, 3, 4))
  expect_identical(as.logical(x > 1 & x < 4), c(FALSE, TRUE, TRUE, FALSE))
  expect_identical(as.logical(x < 2 | x > 3), c(TRUE, FALSE, FALSE, TRUE))
  expect_identical(as.logical(!(x > 2)), c(TRUE, TRUE, FALSE, FALSE))
})

test_that("a scalar comparison can drive R control flow", {
  x <- tf$constant(3)
  expect_true(as.logical(x > 2))
  if (as.logical(x > 2)) hit <- TRUE else hit <- FALSE
  expect_true(hit)
})

test_that("variables take part in arithmetic", {
  v <- tf$Variable(2)
  expect_equal(as.numeric(v * v), 4)
  expect_equal(as.numeric(v + 1), 3)
  expect_equal(as.numeric(1 - v), -1)
  expect_equal(as.numeric(v * tf$constant(5)), 10)
})

test_that("operators are recorded by the tape", {
  x <- tf$constant(c(1, 2, 3))
  with(tf$GradientTape() %as% tape, {
    tape$watch(x)
    y <- x ^ 2 + 3 * x - x / 2 - 1
  })
  g <- tape$gradient(y, x)
  expect_equal(as.numeric(g), 2 * c(1, 2, 3) + 3 - 0.5)

  v <- tf$Variable(3)
  with(tf$GradientTape() %as% tape, {
    z <- -(v * v) + 10
  })
  expect_equal(as.numeric(tape$gradient(z, v)), -6)
})

test_that("math functions", {
  x <- tf$constant(c(1, 4, 9))
  expect_equal(as.numeric(sqrt(x)), c(1, 2, 3))
  expect_equal(as.numeric(exp(tf$constant(0))), 1)
  expect_equal(as.numeric(log(x)), log(c(1, 4, 9)))
  expect_equal(as.numeric(log(tf$constant(8), base = 2)), 3)
  expect_equal(as.numeric(abs(-x)), c(1, 4, 9))
  expect_equal(as.numeric(sin(tf$constant(0))), 0)
  expect_equal(as.numeric(floor(tf$constant(1.5))), 1)
  expect_equal(as.numeric(ceiling(tf$constant(1.5))), 2)
  expect_equal(as.numeric(tanh(tf$constant(0))), 0)
  expect_s3_class(exp(x), "tapeflow.tensor")
})

test_that("math functions are recorded by the tape", {
  x <- tf$constant(2)
  with(tf$GradientTape() %as% tape, {
    tape$watch(x)
    y <- exp(x) + sin(x)
  })
  expect_equal(as.numeric(tape$gradient(y, x)), exp(2) + cos(2), tolerance = 1e-5)
})

test_that("integer tensors are not truncated by R doubles", {
  i <- tf$constant(3L)
  expect_equal(as.numeric(i * 2.5), 7.5)
  expect_equal(as.numeric(i + 1L), 4)
  expect_identical(as.integer(i + 1L), 4L)
  expect_identical(as.logical(i > 2.5), TRUE)
})
