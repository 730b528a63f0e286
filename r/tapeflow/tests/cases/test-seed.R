# The R tutorial "Automatic differentiation and gradient tape" (the project's
# R seed), example by example, with library(tapeflow) in place of
# library(tensorflow). Each test checks the values the tutorial prints.

test_that("gradient with respect to the input tensor (dz_dx is all 8s)", {
  x <- tf$ones(shape(2, 2))

  with(tf$GradientTape() %as% t, {
    t$watch(x)
    y <- tf$reduce_sum(x)
    z <- tf$multiply(y, y)
  })

  # Derivative of z with respect to the original input tensor x
  dz_dx <- t$gradient(z, x)
  expect_equal(as.array(dz_dx), matrix(8, 2, 2))
  expect_identical(dim(dz_dx), c(2L, 2L))
  expect_printed(dz_dx, "tf.Tensor(
[[8. 8.]
 [8. 8.]], shape=(2, 2), dtype=float32)")
})

test_that("gradient with respect to an intermediate value (dz_dy is 8)", {
  x <- tf$ones(shape(2, 2))

  with(tf$GradientTape() %as% t, {
    t$watch(x)
    y <- tf$reduce_sum(x)
    z <- tf$multiply(y, y)
  })

  # Use the tape to compute the derivative of z with respect to the
  # intermediate value y.
  dz_dy <- t$gradient(z, y)
  expect_equal(as.numeric(dz_dy), 8)
  expect_printed(dz_dy, "tf.Tensor(8.0, shape=(), dtype=float32)")
})

test_that("a persistent tape gives several gradients (108 and 6)", {
  x <- tf$constant(3)

  with(tf$GradientTape(persistent = TRUE) %as% t, {
    t$watch(x)
    y <- x * x
    z <- y * y
  })

  # Use the tape to compute the derivative of z with respect to the
  # intermediate value y.
  dz_dx <- t$gradient(z, x) # 108.0 (4*x^3 at x = 3)
  expect_equal(as.numeric(dz_dx), 108)
  expect_printed(dz_dx, "tf.Tensor(108.0, shape=(), dtype=float32)")

  dy_dx <- t$gradient(y, x) # 6.0
  expect_equal(as.numeric(dy_dx), 6)
  expect_printed(dy_dx, "tf.Tensor(6.0, shape=(), dtype=float32)")

  rm(t) # Drop the reference to the tape
  expect_false(exists("t", inherits = FALSE))
})

test_that("R control flow is recorded (12, 12 and 4)", {
  f <- function(x, y) {
    output <- 1
    for (i in seq_len(y)) {
      if (i > 2 & i <= 5)
        output = tf$multiply(output, x)
    }
    output
  }

  grad <- function(x, y) {
    with(tf$GradientTape() %as% t, {
      t$watch(x)
      out <- f(x, y)
    })
    t$gradient(out, x)
  }

  x <- tf$constant(2)
  expect_printed(grad(x, 6), "tf.Tensor(12.0, shape=(), dtype=float32)")
  expect_printed(grad(x, 5), "tf.Tensor(12.0, shape=(), dtype=float32)")
  expect_printed(grad(x, 4), "tf.Tensor(4.0, shape=(), dtype=float32)")
  expect_equal(as.numeric(grad(x, 6)), 12)
  expect_equal(as.numeric(grad(x, 5)), 12)
  expect_equal(as.numeric(grad(x, 4)), 4)
})

test_that("nested tapes give higher-order gradients (3 and 6)", {
  x <- tf$Variable(1.0) # Create a Tensorflow variable initialized to 1.0

  with(tf$GradientTape() %as% t, {
    with(tf$GradientTape() %as% t2, {
      y <- x * x * x
    })
    # Compute the gradient inside the 't' context manager
    # which means the gradient computation is differentiable as well.
    dy_dx <- t2$gradient(y, x)
  })
  d2y_dx <- t$gradient(dy_dx, x)

  expect_equal(as.numeric(dy_dx), 3)
  expect_printed(dy_dx, "tf.Tensor(3.0, shape=(), dtype=float32)")
  expect_equal(as.numeric(d2y_dx), 6)
  expect_printed(d2y_dx, "tf.Tensor(6.0, shape=(), dtype=float32)")
})
