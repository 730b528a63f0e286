# Python errors reach R as R errors carrying the Python message; `with()`
# leaves its context however the block ends.

test_that("a Python exception becomes an R error with the Python message", {
  x <- tf$ones(shape(2, 2))
  e <- expect_error(tf$reduce_sum(x, axis = 5L), "axis")
  expect_true(inherits(e, "error"))
  e <- expect_error(tf$Variable(NULL), "initial_value must be specified", fixed = TRUE)
  expect_true(grepl("ValueError", conditionMessage(e), fixed = TRUE))
})

test_that("a non-persistent tape refuses a second gradient, in R too", {
  x <- tf$constant(3)
  with(tf$GradientTape() %as% t, {
    t$watch(x)
    y <- x * x
  })
  expect_equal(as.numeric(t$gradient(y, x)), 6)
  expect_error(t$gradient(y, x), "persistent")
})

test_that("an error inside with() propagates and the tape stops recording", {
  x <- tf$constant(3)
  expect_error(
    with(tf$GradientTape() %as% t, {
      t$watch(x)
      y <- x * x
      stop("boom in R")
    }),
    "boom in R", fixed = TRUE
  )
  # The failed tape was exited: what follows is not recorded on it, and a new
  # tape works as usual.
  z <- x * x
  with(tf$GradientTape() %as% t2, {
    t2$watch(x)
    w <- x * x * x
  })
  expect_equal(as.numeric(t2$gradient(w, x)), 27)
})

test_that("a Python error inside with() propagates with its message", {
  x <- tf$constant(3)
  expect_error(
    with(tf$GradientTape() %as% t, {
      t$watch(x)
      tf$Variable(NULL)
    }),
    "initial_value must be specified", fixed = TRUE
  )
  with(tf$GradientTape() %as% t2, {
    t2$watch(x)
    y <- x * 2
  })
  expect_equal(as.numeric(t2$gradient(y, x)), 2)
})

test_that("errors of the R layer are R errors", {
  expect_error(shape(1.5), "whole numbers")
  expect_error(tf$constant(c(1, 2))[0], "1-based")
  expect_error(as_tensor(matrix("a")), "cannot convert")
})
