"""autograd's `check_grads(f, modes=..., order=...)(*args)` over tapeflow's check."""
import tapeflow as _tf


def check_grads(fun, modes=('fwd', 'rev'), order=2):
    def check(*args):
        _tf.check_grads(fun, args, order=order, modes=tuple(modes))
    return check
