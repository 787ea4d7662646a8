"""One way to measure every stack: a stack's `block` places the exercise's block over L blocks
from a `Placement`, its `instrument` watches the very call that is checked and gives a `Record`,
and `driver` turns block and instrument into what the bench's drivers read. Imports numpy only.

- `record`: `Record`, `Evaluation`, `NotObservable`: one meaning per figure, its method named.
- `placement`: `Placement`: regions over L blocks (none, every, segments, nested, binomial, any
  list of nested regions), a policy per region.
- `stacked`: `stacked(items, block, region)`, a placement as one function of x and the
  parameters, for a stack whose region takes `(x, *params)`.
- `driver`: `StackBench(block, instrument)`, a bench module for `conformance.benchmark`, and
  `bench_module(name)`, which gives a stack's block module that shape.

What a stack writes is its README's "Measurements" (autograd's is the first).
"""
