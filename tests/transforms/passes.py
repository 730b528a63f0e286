"""Run the pipeline's front passes on a function, for tests of one pass at a time."""
from tapeflow.syntax import fence, parse, resolve
from tapeflow.syntax.naming import Namer
from tapeflow.syntax.unparse import unparse
from tapeflow.transforms import anf, desugar


def front(fn, upto='anf'):
    source = parse.parse_function(fn)
    resolve.resolve(source.node, fn)
    fence.check(source)
    namer = Namer.for_function(source.node)
    desugar.transform(source.node, namer, source, fn)
    if upto == 'anf':
        anf.transform(source.node, namer)
    return source.node


def text(fn, upto='anf'):
    return unparse(front(fn, upto))
