"""The tape's depth, checked under `__debug__` (`transforms.tape_check`)."""
import math

import pytest

from tapeflow.api import compile_adjoint


def loop(x):
    for i in range(5):
        x = math.sin(x) * x
    return x


def test_a_backward_that_pops_other_than_its_forward_pushed_is_an_internal_error():
    compiled = compile_adjoint(loop)
    tape = ['below']                      # a caller's values under ours stay untouched
    value = compiled.forward(tape, 0.7)
    assert compiled.backward(tape, 1.0) == compiled.combined(0.7)[1] and tape == ['below']
    compiled.forward(tape, 0.7)
    tape.insert(1, 'stray')               # one value more than the forward pushed
    with pytest.raises(AssertionError, match='loop_backward popped other than its forward pushed'):
        compiled.backward(tape, 1.0)
    assert value == compiled.combined(0.7)[0]


def while_loop(x):
    k = 0
    while k < 5:
        x = math.sin(x) * x
        k += 1
    return x


def test_the_combined_function_checks_its_tape_is_empty():
    text = compile_adjoint(while_loop).source     # (a range loop keeps no tape: `slots`)
    assert text.splitlines()[-2].strip() == \
        "assert not _tape, 'tapeflow internal error: dwhile_loop left values on its tape'"
