from autograd.misc.flatten import flatten  # noqa: F401
