"""The mutation fuzzer: random programs full of aliases, views and in-place writes.

`generator.generate(choices)` writes a program (module source text plus its
arguments) from a stream of integer choices; `choices` makes that stream from
a seed (the `make fuzz` command line), from Hypothesis (the pytest run, which
shrinks a failure to a minimal program) or from a recorded list (the command
line's own shrinker). `oracle.check(program)` classifies one program: its
gradient must agree with central finite differences, or tapeflow must refuse
it with a located `UnsupportedError`.
"""
