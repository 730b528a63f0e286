# Printing tensors and variables as Python (and the seed) shows them.

test_that("scalars print as tf.Tensor(value, shape=(), dtype=...)", {
  expect_printed(tf$constant(8), "tf.Tensor(8.0, shape=(), dtype=float32)")
  expect_printed(tf$constant(3L), "tf.Tensor(3, shape=(), dtype=int32)")
  expect_printed(tf$constant(TRUE), "tf.Tensor(True, shape=(), dtype=bool)")
})

test_that("vectors and matrices print as NumPy does, inside tf.Tensor(...)", {
  expect_printed(tf$constant(c(1, 2, 3)), "tf.Tensor([1. 2. 3.], shape=(3,), dtype=float32)")
  expect_printed(tf$ones(shape(2, 2)) * 8, "tf.Tensor(
[[8. 8.]
 [8. 8.]], shape=(2, 2), dtype=float32)")
})

test_that("format() and auto-printing at top level", {
  x <- tf$constant(6)
  expect_identical(format(x), "tf.Tensor(6.0, shape=(), dtype=float32)")
  expect_output(x, "tf.Tensor(6.0, shape=(), dtype=float32)", fixed = TRUE)
  expect_output(print(x), "tf.Tensor(6.0, shape=(), dtype=float32)", fixed = TRUE)
  utils::capture.output(shown <- withVisible(print(x)))
  expect_false(shown$visible)
  expect_identical(shown$value, x)
})

test_that("variables print as tf.Variable", {
  v <- tf$Variable(1.0)
  expect_output(print(v), "tf.Variable", fixed = TRUE)
  expect_output(print(v), "1.0", fixed = TRUE)
  expect_output(print(v), "float32", fixed = TRUE)
})

test_that("shapes print as Python tuples", {
  expect_output(print(shape(2, 2)), "(2, 2)", fixed = TRUE)
})
