"""`autograd.scipy`: SciPy's modules (registered in `autograd/__init__.py`), and
`signal`, whose `convolve` takes autograd's `axes` and `dot_axes`."""
import scipy.integrate as integrate  # noqa: F401
import scipy.special as special  # noqa: F401
import scipy.stats as stats  # noqa: F401

from autograd.scipy import signal  # noqa: F401
