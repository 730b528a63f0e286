"""`autograd.numpy` is NumPy: this module replaces itself in sys.modules."""
import sys

import numpy

sys.modules[__name__] = numpy
sys.modules[__name__ + '.random'] = numpy.random
sys.modules[__name__ + '.linalg'] = numpy.linalg
sys.modules[__name__ + '.fft'] = numpy.fft
