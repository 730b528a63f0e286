# with(... %as% name, { ... }): binding, scoping and the value of the block.

test_that("%as% binds the entered context in the calling environment", {
  f <- function() {
    with(tf$GradientTape() %as% tape, {
      inner <- 1
    })
    c(exists("tape", inherits = FALSE), exists("inner", inherits = FALSE))
  }
  expect_identical(f(), c(TRUE, TRUE))
  expect_false(exists("tape", inherits = FALSE))
})

test_that("with() returns the block's value invisibly", {
  res <- withVisible(with(tf$GradientTape() %as% t, { 42 }))
  expect_identical(res$value, 42)
  expect_false(res$visible)
})

test_that("with(..., as = name) is the same as %as%", {
  x <- tf$constant(2)
  with(tf$GradientTape(), as = tape, {
    tape$watch(x)
    y <- x * x
  })
  expect_equal(as.numeric(tape$gradient(y, x)), 4)
})

test_that("a tape made beforehand can be entered by name", {
  x <- tf$constant(2)
  tape <- tf$GradientTape(persistent = TRUE)
  with(tape, {
    tape$watch(x)
    y <- x * x * x
  })
  expect_equal(as.numeric(tape$gradient(y, x)), 12)
  expect_equal(as.numeric(tape$gradient(y, x)), 12)
})

test_that("watch_accessed_variables and gradients of several sources", {
  a <- tf$Variable(2)
  b <- tf$Variable(5)
  with(tf$GradientTape() %as% tape, {
    y <- a * b + a
  })
  grads <- tape$gradient(y, list(a, b))
  expect_true(is.list(grads))
  expect_equal(as.numeric(grads[[1]]), 6)
  expect_equal(as.numeric(grads[[2]]), 2)

  with(tf$GradientTape(watch_accessed_variables = FALSE) %as% tape, {
    y <- a * b
  })
  expect_true(is.null(tape$gradient(y, a)))
})
