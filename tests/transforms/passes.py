"""The pipeline's front passes on a function, for tests of one pass at a time: the same
list (`pipeline.FRONT`, the start of `PASSES`) and the same loop that compile it."""
from tapeflow.syntax.unparse import unparse
from tapeflow.transforms import pipeline


def front(fn, upto='anf'):
    node, _ = pipeline.front(fn, upto)
    return node


def text(fn, upto='anf'):
    return unparse(front(fn, upto))
