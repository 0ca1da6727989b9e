"""The book's benchmark suite: where JAX's speed comes from, measured on your machine.

Run it from the repository root with ``python -m benchmarks`` (``--quick`` for a smoke run on
tiny sizes, ``--out PATH`` to choose where the JSON goes). It measures four things:

1. :mod:`benchmarks.elementwise`: an elementwise-heavy function in NumPy, eager JAX and
   compiled JAX at several sizes, as time per call and achieved memory bandwidth; the
   machine's memory bandwidth on all cores (STREAM's copy and triad); and the ladder from the
   function as a reader writes it to as close to that bandwidth as JAX gets;
2. :mod:`benchmarks.training`: the book's XOR classifier trained to the same test accuracy
   from the same initial weights, in pairs: PyTorch and JAX over the same ``DataLoader``
   (JAX as chapter 11's loop, ``nnx.jit`` over ``nnx.Optimizer``, and as its functional
   step, ``nnx.split`` and ``jax.jit``), and PyTorch over pre-loaded tensors (eager, and with
   ``torch.compile``) against JAX's epochs compiled with ``lax.scan``, each trainer in a
   process of its own;
3. :mod:`benchmarks.dispatch`: what one tiny operation costs eagerly and compiled, and what a
   host round trip per step costs;
4. :mod:`benchmarks.lm`: the book's small language model trained by JAX's ``nnx.jit`` step,
   by a port to eager PyTorch and by the port under ``torch.compile``, from the same weights
   on the same batches: tokens per second, and the model FLOPs utilization against the
   machine's measured matrix-multiply peak.

The appendix "Performance, measured" renders the JSON this writes.
"""

SCHEMA_VERSION = 4
