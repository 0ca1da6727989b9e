"""The book's benchmark suite: where JAX's speed comes from, measured on your machine.

Run it from the repository root with ``python -m benchmarks`` (``--quick`` for a smoke run on
tiny sizes, ``--out PATH`` to choose where the JSON goes). It measures three things:

1. :mod:`benchmarks.elementwise`: an elementwise-heavy function in NumPy, eager JAX and
   compiled JAX at several sizes, as time per call and achieved memory bandwidth, next to the
   machine's measured copy bandwidth;
2. :mod:`benchmarks.training`: the book's XOR classifier trained to the same test accuracy by
   an idiomatic PyTorch loop, by JAX over a ``DataLoader`` and by JAX with whole epochs
   compiled with ``lax.scan``, each in a fresh process so that its peak memory is its own;
3. :mod:`benchmarks.dispatch`: what one tiny operation costs eagerly and compiled, and what a
   host round trip per step costs.

The appendix "Performance, measured" renders the JSON this writes.
"""

SCHEMA_VERSION = 1
