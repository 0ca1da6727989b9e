"""An elementwise-heavy function in NumPy, eager JAX and compiled JAX, against a copy.

The function is chapter 1's ``poly``: seven elementwise operations on a square matrix and its
transpose. Its least possible memory traffic is one read of ``x`` and one write of the result,
``2 * x.nbytes``; dividing that by the time per call gives the *achieved bandwidth*. The
*copy bandwidth* of the machine is the same count for the simplest program that moves the same
bytes: a copy, measured with NumPy (into an existing array) and with a compiled JAX copy (into a
new buffer, as every JAX result is unless an input is donated). For a program that reads ``x``
and writes a separate result of the same size, the faster of the two is the practical
ceiling; an update in place of a donated input moves less memory (no destination to bring into
the cache first) and can pass it.

Run alone with ``python -m benchmarks.elementwise`` (prints the JSON record).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import helpers
from benchmarks.common import minor_page_faults, seconds, timing_record

FULL_SIZES = (250, 500, 1000, 2000, 4000)
QUICK_SIZES = (32, 64)


def poly(x):
    """Chapter 1's function: NumPy's operations on a NumPy array, JAX's on a JAX array."""
    return (x + x * x + 3.0) * (x * x + x * x.T)


def poly_without_transpose(x):
    """The same operations with ``x`` in place of ``x.T``: every read is contiguous."""
    return (x + x * x + 3.0) * (x * x + x * x)


def jax_copy(x):
    """A compiled copy: read ``x``, write a new array (XLA turns ``x + 0`` into a copy)."""
    return x + 0


def _input(n: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)


def _compile_seconds(fn, x) -> float:
    """Tracing plus XLA compilation, timed on a fresh ``jax.jit`` wrapper."""
    return seconds(lambda: jax.jit(fn).lower(x).compile())


def _bandwidth(nbytes: int, timing: helpers.Timing) -> float:
    return nbytes / timing.median / 1e9


def _faults_per_call(fn, x, calls: int = 5) -> float | None:
    """Minor page faults per call: each is the OS handing over a fresh page of memory."""
    jax.block_until_ready(fn(x))
    before = minor_page_faults()
    if before is None:
        return None
    for _ in range(calls):
        jax.block_until_ready(fn(x))
    return (minor_page_faults() - before) / calls


def measure_size(n: int, repeat: int) -> dict[str, Any]:
    """Every variant at one size: timings, achieved bandwidth, one-off costs."""
    x_np = _input(n)
    x = jnp.asarray(x_np)
    # One-off costs first, before anything else has run at this shape: compiling the jitted
    # functions, and the first eager call, which compiles each operation for the new shape.
    one_off = {
        "jax_jit_compile_s": _compile_seconds(poly, x),
        "copy_jax_jit_compile_s": _compile_seconds(jax_copy, x),
        "jax_eager_first_call_s": seconds(lambda: jax.block_until_ready(poly(x))),
    }
    poly_jit, copy_jit = jax.jit(poly), jax.jit(jax_copy)
    # The variants compute the same thing (float32 rounding aside).
    assert np.allclose(np.asarray(poly_jit(x)), poly(x_np), rtol=1e-4, atol=1e-3)

    destination = np.empty_like(x_np)
    timings = {
        "numpy": helpers.timeit(poly, x_np, repeat=repeat),
        "jax_eager": helpers.timeit(poly, x, repeat=repeat),
        "jax_jit": helpers.timeit(poly_jit, x, repeat=repeat),
        "copy_numpy": helpers.timeit(np.copyto, destination, x_np, repeat=repeat),
        "copy_jax_jit": helpers.timeit(copy_jit, x, repeat=repeat),
    }
    nbytes = 2 * x_np.nbytes  # read x once, write the result once
    return {
        "n": n,
        "bytes_moved": nbytes,
        "variants": {
            name: {**timing_record(t), "bandwidth_GBps": _bandwidth(nbytes, t)}
            for name, t in timings.items()
        },
        "one_off_s": one_off,
    }


def _huge_page_probe(n: int, repeat: int) -> dict[str, Any] | None:
    """Re-time the compiled variants with glibc's malloc asked to use transparent huge pages.

    XLA's CPU runtime allocates every result with ``malloc``; a large one comes straight from
    the OS as fresh 4 KiB pages, and the first write to each page is a page fault. NumPy asks
    for 2 MiB pages for its large arrays (``madvise``), so it takes far fewer faults.
    ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` (glibc 2.35 and later) makes ``malloc`` do the
    same for XLA. Linux with glibc only; elsewhere this returns None.
    """
    libc, version = platform.libc_ver()
    if sys.platform != "linux" or libc != "glibc" or tuple(map(int, version.split("."))) < (2, 35):
        return None
    env = {**os.environ, "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
    command = [sys.executable, "-m", "benchmarks.elementwise", "--probe", str(n),
               "--repeat", str(repeat)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def probe(n: int, repeat: int) -> dict[str, Any]:
    """The compiled variants alone at one size, with their page faults (see the probe above)."""
    x = jnp.asarray(_input(n))
    nbytes = 2 * x.nbytes
    found = {}
    for name, fn in (("jax_jit", poly), ("jax_jit_without_transpose", poly_without_transpose),
                     ("copy_jax_jit", jax_copy)):
        compiled = jax.jit(fn)
        timing = helpers.timeit(compiled, x, repeat=repeat)
        found[name] = {**timing_record(timing), "bandwidth_GBps": _bandwidth(nbytes, timing),
                       "page_faults_per_call": _faults_per_call(compiled, x)}
    return found


class _Chained:
    """Call a jitted function that donates its input on its own previous result.

    A donated input is consumed by the call, so it cannot be passed twice: each call takes
    the last call's output instead, which has the same shape and lives in a buffer XLA may
    reuse for the next result.
    """

    def __init__(self, fn, x) -> None:
        self.fn = jax.jit(fn, donate_argnums=0)
        self.y = jnp.array(x, copy=True)

    def __call__(self, _unused=None):
        self.y = self.fn(self.y)
        return self.y


def diagnostics(n: int, repeat: int) -> dict[str, Any]:
    """Why compiled code may stay below the copy line at size ``n`` (CPU backend only).

    Two suspects, measured rather than guessed: the transpose (``x.T`` is read with a stride
    of ``n`` elements, so nearly every element read touches a new cache line), and fresh
    memory (page faults on every new result buffer). The donated variants let XLA write the
    result into the input's buffer where it can, which takes fresh memory out of the loop.
    """
    x_np = _input(n)
    x = jnp.asarray(x_np)
    nbytes = 2 * x_np.nbytes
    destination = np.empty_like(x_np)
    variants = {
        "numpy": (poly, x_np),
        "numpy_without_transpose": (poly_without_transpose, x_np),
        "jax_jit": (jax.jit(poly), x),
        "jax_jit_without_transpose": (jax.jit(poly_without_transpose), x),
        "jax_jit_donated": (_Chained(poly, x), None),
        "jax_jit_without_transpose_donated": (_Chained(poly_without_transpose, x), None),
        "copy_numpy": (lambda a: np.copyto(destination, a), x_np),
        "copy_numpy_new_array": (np.copy, x_np),
        "copy_jax_jit": (jax.jit(jax_copy), x),
    }
    found = {}
    for name, (fn, arg) in variants.items():
        timing = helpers.timeit(fn, arg, repeat=repeat)
        found[name] = {**timing_record(timing), "bandwidth_GBps": _bandwidth(nbytes, timing),
                       "page_faults_per_call": _faults_per_call(fn, arg)}
    return {"n": n, "bytes_moved": nbytes, "variants": found,
            "huge_pages_for_xla": _huge_page_probe(n, repeat)}


def run(quick: bool = False) -> dict[str, Any]:
    """The whole elementwise benchmark as a JSON-ready dict."""
    sizes = QUICK_SIZES if quick else FULL_SIZES
    repeat = 3 if quick else 7
    results = [measure_size(n, repeat) for n in sizes]
    largest = results[-1]["variants"]
    copy_bandwidth = max(largest["copy_numpy"]["bandwidth_GBps"],
                         largest["copy_jax_jit"]["bandwidth_GBps"])
    summary = {
        "largest_n": sizes[-1],
        "copy_bandwidth_GBps": copy_bandwidth,
        "jit_speedup_vs_numpy": largest["numpy"]["median_s"] / largest["jax_jit"]["median_s"],
        "jit_fraction_of_copy_bandwidth": largest["jax_jit"]["bandwidth_GBps"] / copy_bandwidth,
    }
    record: dict[str, Any] = {
        "function": "(x + x*x + 3) * (x*x + x*x.T), float32, x of shape (n, n)",
        "bytes_moved": "2 * n * n * 4: one read of x and one write of the result",
        "sizes": list(sizes),
        "results": results,
        "summary": summary,
        "diagnostics": None,
    }
    if jax.default_backend() == "cpu":
        record["diagnostics"] = diagnostics(sizes[-1], repeat)
    return record


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--probe", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=7, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    result = probe(args.probe, args.repeat) if args.probe else run(quick=args.quick)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
