"""An elementwise-heavy function in NumPy, eager JAX and compiled JAX, against a copy.

The function is chapter 1's ``poly``: seven elementwise operations on a square matrix and its
transpose. Its least possible memory traffic is one read of ``x`` and one write of the result,
``2 * x.nbytes``; dividing that by the time per call gives the *achieved bandwidth*. The
*copy bandwidth* of the machine is the same count for the simplest program that moves the same
bytes: a copy, measured with NumPy (into an existing array) and with a compiled JAX copy (into a
new buffer, as every JAX result is unless an input is donated). For a program that reads ``x``
and writes a separate result of the same size, the faster of the two is the practical
ceiling. An update in place of a donated input can pass it: it moves two streams of memory
traffic per element (read ``x``, write it back), where a copy moves three (read ``x``, read the
destination's line into the cache, write it back).

Every variant's page faults per call are recorded too, because fresh memory explains several
of the results (see ``_allocator_probe``), and so is how many cores the compiled loop runs on
(see ``_one_core_probe``).

Run alone with ``python -m benchmarks.elementwise`` (prints the JSON record).
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import helpers
from benchmarks.common import minor_page_faults, seconds, timing_record

FULL_SIZES = (250, 500, 1000, 2000, 4000)
QUICK_SIZES = (32, 64)
# glibc's malloc asked to keep the memory it has: allocations below 256 MiB come from its heap
# rather than from a mapping of their own, and it hands free memory back to the system only
# when 4 GiB of it have piled up. Freed arrays are then reused, already paged in.
KEEP_MEMORY = {"MALLOC_MMAP_THRESHOLD_": str(2**28), "MALLOC_TRIM_THRESHOLD_": str(2**32)}
# glibc's malloc asked to back large allocations with transparent huge pages (2 MiB).
HUGE_PAGES = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}


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
    """Tracing plus XLA compilation, timed once on a fresh ``jax.jit`` wrapper."""
    return seconds(lambda: jax.jit(fn).lower(x).compile())


def _loop_partitions(fn, x) -> list[int]:
    """How many parts XLA's CPU backend splits the compiled loop into, to run them in parallel.

    Read from the compiled program's ``outer_dimension_partitions`` (one count per split
    dimension); an empty list where the loop runs in one piece, or on other backends.
    """
    text = jax.jit(fn).lower(x).compile().as_text()
    found = re.search(r'"outer_dimension_partitions":\[([^\]]*)\]', text)
    return [int(p.strip('" ')) for p in found.group(1).split(",") if p.strip()] if found else []


def _bandwidth(nbytes: int, timing: helpers.Timing) -> float:
    return nbytes / timing.median / 1e9


class _Donated:
    """A jitted function that donates its input, called each time on a fresh copy of ``x``.

    A donated input is consumed by the call, so the same array cannot be passed twice.
    ``prepare`` makes the copy, and the timing below calls it before starting the clock: each
    call then computes from the same values as every other variant. (Feeding each call the
    previous call's result instead would change the values: after a few dozen calls of
    ``poly`` they are infinite or NaN.)
    """

    def __init__(self, fn, x) -> None:
        self.fn = jax.jit(fn, donate_argnums=0)
        self.x = x

    def prepare(self):
        return jax.block_until_ready(jnp.array(self.x, copy=True))

    def __call__(self, y):
        return self.fn(y)


def _timeit_donated(fn: _Donated, repeat: int, min_run_seconds: float = 0.02) -> helpers.Timing:
    """``helpers.timeit`` for a :class:`_Donated`: the fresh copy is made outside the clock.

    One warm-up call, then ``repeat`` runs of ``calls`` calls (``calls`` chosen so that a run
    lasts ``min_run_seconds``), each call timed from the moment its prepared input exists until
    its result does. The result is freed after the clock stops, as in a loop that donates each
    result to the next call, where it is never freed.
    """

    def one_call() -> float:
        y = fn.prepare()
        start = time.perf_counter()
        result = jax.block_until_ready(fn(y))
        elapsed = time.perf_counter() - start
        del result  # freeing a large buffer takes milliseconds: not part of the call
        return elapsed

    one_call()  # warm-up: compiles
    calls = max(1, min(1000, math.ceil(min_run_seconds / max(one_call(), 1e-9))))
    runs = [sum(one_call() for _ in range(calls)) / calls for _ in range(repeat)]
    return helpers.Timing(tuple(runs), calls)


def _faults_per_call(fn, x, calls: int = 5) -> float | None:
    """Minor page faults per call: each is the OS handing over a fresh page of memory.

    For a :class:`_Donated`, ``x`` is ignored and only the calls are counted, not the copies
    made before them.
    """
    if minor_page_faults() is None:
        return None
    if isinstance(fn, _Donated):
        jax.block_until_ready(fn(fn.prepare()))
        total = 0
        for _ in range(calls):
            y = fn.prepare()
            before = minor_page_faults()
            jax.block_until_ready(fn(y))
            total += minor_page_faults() - before
        return total / calls
    jax.block_until_ready(fn(x))
    before = minor_page_faults()
    for _ in range(calls):
        jax.block_until_ready(fn(x))
    return (minor_page_faults() - before) / calls


def _record(fn, arg, nbytes: int, repeat: int) -> dict[str, Any]:
    """Timing, achieved bandwidth and page faults per call of ``fn(arg)``."""
    timing = _timeit_donated(fn, repeat) if isinstance(fn, _Donated) else helpers.timeit(
        fn, arg, repeat=repeat)
    return {**timing_record(timing), "bandwidth_GBps": _bandwidth(nbytes, timing),
            "page_faults_per_call": _faults_per_call(fn, arg)}


def measure_size(n: int, repeat: int) -> dict[str, Any]:
    """Every variant at one size: timings, achieved bandwidth, page faults, one-off costs."""
    x_np = _input(n)
    x = jnp.asarray(x_np)
    # One-off costs first, before anything else has run at this shape: compiling the jitted
    # functions, and the first eager call, which compiles each operation for the new shape.
    # Each happens once, so each is a single measurement.
    one_off = {
        "jax_jit_compile_s": _compile_seconds(poly, x),
        "copy_jax_jit_compile_s": _compile_seconds(jax_copy, x),
        "jax_eager_first_call_s": seconds(lambda: jax.block_until_ready(poly(x))),
    }
    poly_jit, copy_jit = jax.jit(poly), jax.jit(jax_copy)
    # The variants compute the same thing (float32 rounding aside).
    assert np.allclose(np.asarray(poly_jit(x)), poly(x_np), rtol=1e-4, atol=1e-3)

    destination = np.empty_like(x_np)
    nbytes = 2 * x_np.nbytes  # read x once, write the result once
    variants = {
        "numpy": (poly, x_np),
        "jax_eager": (poly, x),
        "jax_jit": (poly_jit, x),
        "copy_numpy": (lambda a: np.copyto(destination, a), x_np),
        "copy_jax_jit": (copy_jit, x),
    }
    return {
        "n": n,
        "bytes_moved": nbytes,
        "variants": {name: _record(fn, arg, nbytes, repeat)
                     for name, (fn, arg) in variants.items()},
        "one_off_s": one_off,
        "jax_jit_loop_partitions": _loop_partitions(poly, x),
    }


def _glibc() -> bool:
    """Whether this is Linux with glibc 2.35 or later, whose ``malloc`` the probes configure."""
    libc, version = platform.libc_ver()
    return (sys.platform == "linux" and libc == "glibc"
            and tuple(map(int, version.split("."))) >= (2, 35))


def _in_subprocess(*args: str, env: dict[str, str] | None = None) -> Any:
    """Run this module again with ``args`` (and extra environment variables): its JSON.

    glibc's malloc reads its settings, and XLA counts the cores it may use, when a process
    starts, so each probe needs a process of its own.
    """
    command = [sys.executable, "-m", "benchmarks.elementwise", *args]
    done = subprocess.run(command, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _huge_page_probe(n: int, repeat: int) -> dict[str, Any] | None:
    """Re-time the compiled variants with glibc's malloc asked to use transparent huge pages.

    XLA's CPU runtime allocates every result with ``malloc``; a large one comes straight from
    the OS as fresh 4 KiB pages, and the first write to each page is a page fault. NumPy asks
    for 2 MiB pages for its arrays of 4 MiB or more (``madvise``, which Linux honours when its
    transparent huge pages are set to ``madvise`` or ``always``), so it takes far fewer faults.
    ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` makes ``malloc`` do the same for XLA. Linux with
    glibc only; elsewhere this returns None.
    """
    if not _glibc():
        return None
    return _in_subprocess("--probe", str(n), "--repeat", str(repeat), env=HUGE_PAGES)


def _allocator_probe(sizes: tuple[int, ...], repeat: int) -> dict[str, Any] | None:
    """NumPy and compiled JAX again at every size, with glibc's malloc keeping its memory.

    By default glibc's ``malloc`` gives freed memory back to the OS, so the next call's arrays
    come back as fresh pages, each with a page fault. At ``n = 1000`` this hits NumPy hard: its
    temporaries of 3.8 MiB are just under the 4 MiB from which NumPy asks for huge pages, and
    ``malloc`` grows its heap for them and trims the top back when they are freed.
    ``KEEP_MEMORY`` makes ``malloc`` keep and reuse the memory instead; both variants run under
    the same setting, so their ratio is what fusion gains without fresh memory, together with
    the second core XLA's loop may use (``_one_core_probe`` takes that away).
    Linux with glibc only; elsewhere this returns None.
    """
    if not _glibc():
        return None
    found = _in_subprocess("--variants-probe", ",".join(map(str, sizes)),
                           "--repeat", str(repeat), env=KEEP_MEMORY)
    return {"environment": KEEP_MEMORY, "results": found}


def _one_core_probe(sizes: tuple[int, ...], repeat: int) -> dict[str, Any] | None:
    """NumPy and compiled JAX again at every size, in a process allowed one core only.

    XLA's CPU backend splits a large fused loop into parts that run on all the cores it may
    use (``jax_jit_loop_partitions``); NumPy's elementwise operations use one thread. Allowed
    one core, XLA compiles the loop in one piece, so this compares one thread with one thread.
    Linux only (it needs ``os.sched_setaffinity``) and machines with several cores; elsewhere
    this returns None.
    """
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        return None
    found = _in_subprocess("--variants-probe", ",".join(map(str, sizes)),
                           "--repeat", str(repeat), "--one-core")
    return {"cores": 1, "results": found}


def probe(n: int, repeat: int) -> dict[str, Any]:
    """The compiled variants alone at one size, with their page faults (see the probe above)."""
    x = jnp.asarray(_input(n))
    nbytes = 2 * x.nbytes
    functions = {"jax_jit": poly, "jax_jit_without_transpose": poly_without_transpose,
                 "copy_jax_jit": jax_copy}
    return {name: _record(jax.jit(fn), x, nbytes, repeat) for name, fn in functions.items()}


def variants_probe(sizes: list[int], repeat: int) -> list[dict[str, Any]]:
    """NumPy and compiled JAX at each size, with their page faults (for the probes above)."""
    found = []
    for n in sizes:
        x_np = _input(n)
        x = jnp.asarray(x_np)
        nbytes = 2 * x_np.nbytes
        found.append({
            "n": n,
            "variants": {"numpy": _record(poly, x_np, nbytes, repeat),
                         "jax_jit": _record(jax.jit(poly), x, nbytes, repeat)},
            "jax_jit_loop_partitions": _loop_partitions(poly, x),
        })
    return found


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
    donated = _Donated(poly, x)
    donated_without_transpose = _Donated(poly_without_transpose, x)
    # Donation changes where the result goes, not what it is.
    expected = np.asarray(jax.jit(poly)(x))
    assert np.allclose(np.asarray(donated(donated.prepare())), expected, rtol=1e-4, atol=1e-3)
    variants = {
        "numpy": (poly, x_np),
        "numpy_without_transpose": (poly_without_transpose, x_np),
        "jax_jit": (jax.jit(poly), x),
        "jax_jit_without_transpose": (jax.jit(poly_without_transpose), x),
        "jax_jit_donated": (donated, None),
        "jax_jit_without_transpose_donated": (donated_without_transpose, None),
        "copy_numpy": (lambda a: np.copyto(destination, a), x_np),
        "copy_numpy_new_array": (np.copy, x_np),
        "copy_jax_jit": (jax.jit(jax_copy), x),
    }
    found = {name: _record(fn, arg, nbytes, repeat) for name, (fn, arg) in variants.items()}
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
        "allocator_keeps_memory": _allocator_probe(sizes, repeat),
        "one_core": _one_core_probe(sizes, repeat),
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
    parser.add_argument("--variants-probe", help=argparse.SUPPRESS)
    parser.add_argument("--one-core", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=7, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one_core:  # before JAX starts its CPU backend, which counts the cores it may use
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    if args.probe:
        result = probe(args.probe, args.repeat)
    elif args.variants_probe:
        result = variants_probe([int(n) for n in args.variants_probe.split(",")], args.repeat)
    else:
        result = run(quick=args.quick)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
