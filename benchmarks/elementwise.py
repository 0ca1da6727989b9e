"""An elementwise-heavy function in NumPy, eager JAX and compiled JAX, against the memory limit.

The function is chapter 1's ``poly``: seven elementwise operations on a square matrix and its
transpose. Its least possible memory traffic is one read of ``x`` and one write of the result,
``2 * x.nbytes``; dividing that by the time per call gives the *achieved bandwidth*, counted
the way the STREAM benchmark counts it (the bytes the program must read and write, not the
extra traffic the caches may add on their own).

Three parts:

1. ``results``: NumPy, eager JAX and ``jax.jit`` at five sizes, next to the fastest copy of the
   same bytes at each size, with page faults per call, the one-off costs, and how many parts
   XLA splits the compiled loop into; with NumPy and ``jax.jit`` again in a process whose
   ``malloc`` keeps its memory and in a process allowed one core (the two *probes*), timed in
   the same rounds.
2. ``memory_bandwidth``: the machine's memory bandwidth, STREAM style, with arrays of the
   largest size: a copy (``a = b``) and a triad (``a = b + s * c``) into existing arrays, on
   one thread and on every core, written with NumPy (one slice per thread) and as jitted JAX
   functions whose loop XLA spreads over its threads (the destination donated, so that no
   fresh memory is involved). The fastest all-core copy is the limit for a function that reads
   one array and writes one.
3. ``ladder``: at the largest size, from the function as a reader writes it to as close to that
   limit as JAX gets, one change per rung, every rung computing ``poly`` (checked: each rung's
   result equals ``poly(x)``): NumPy, eager JAX, ``jax.jit``, huge pages for XLA's buffers (an
   environment setting), a layout that gives the loop ``x.T``'s values in the order it reads
   them (``x.T`` stored once as a second input, made outside the clock, its bytes counted),
   the input donated. The other combinations of those changes are measured too
   (``ladder["variants"]``), with each compiled variant's HLO cost analysis and, for every
   variant, page faults and CPU time (user and system) per call: where the time goes. Among
   them, ``poly_without_transpose``, a different function (``x`` in place of ``x.T``) that
   moves the same bytes as ``poly`` with every read in order: the price of the strided read
   alone. It is never a rung.

Everything compared is measured together, in interleaved rounds (every variant once per
round, in a rotating order), so that a machine shared with other programs slows them alike:
each size's variants with the probes' at that size, and parts 2 and 3 together. Variants that
need another environment (glibc reads its settings, and XLA counts its cores, when a process
starts) run in worker processes driven round by round from this one. In parts 2 and 3, each
timed call starts with the caches emptied of its data.

Run alone with ``python -m benchmarks.elementwise`` (prints the JSON record).
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import helpers
from benchmarks.common import (
    Variant,
    interleaved,
    last_level_cache_bytes,
    seconds,
    timing_record,
)

FULL_SIZES = (250, 500, 1000, 2000, 4000)
QUICK_SIZES = (32, 64)
# glibc's malloc asked to keep the memory it has: allocations below 256 MiB come from its heap
# rather than from a mapping of their own, and it hands free memory back to the system only
# when 4 GiB of it have piled up. Freed arrays are then reused, already paged in.
KEEP_MEMORY = {"MALLOC_MMAP_THRESHOLD_": str(2**28), "MALLOC_TRIM_THRESHOLD_": str(2**32)}
# glibc's malloc asked to back its large allocations with transparent huge pages (2 MiB): it
# calls madvise(MADV_HUGEPAGE) on them, which Linux honours when its transparent huge pages
# are set to "madvise" or "always". XLA's CPU runtime allocates its buffers with malloc.
HUGE_PAGES = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
TRIAD_SCALAR = 3.0
TRIAD_BLOCK = 2**16  # NumPy's triad works in blocks of 256 KiB, which stay in the core's cache
# The ladder, one change per rung: (name, what changed from the rung before). Every rung
# computes poly.
LADDER = (
    ("numpy", "the function as written, on NumPy arrays"),
    ("jax_eager", "JAX arrays, no jit: one compiled program per operation"),
    ("jax_jit", "jax.jit: one fused loop"),
    ("jax_jit_huge_pages", "huge pages for XLA's buffers (GLIBC_TUNABLES)"),
    ("jax_jit_stored_transpose_huge_pages",
     "x.T stored as a second input (made once, outside the clock): every read in order, "
     "one more array read"),
    ("jax_jit_stored_transpose_donated_huge_pages",
     "x donated: the result written over it"),
)
# What each variant of the ladder computes, by the start of its name (the longest match).
FUNCTIONS = {
    "numpy": "poly",
    "jax_eager": "poly",
    "jax_jit": "poly",
    "jax_jit_stored_transpose": "poly, x.T given as a second input",
    "numpy_without_transpose": "a different function: x in place of x.T",
    "jax_jit_without_transpose": "a different function: x in place of x.T",
    "copy_jax_jit_new_array": "a copy of x",
}


def poly(x):
    """Chapter 1's function: NumPy's operations on a NumPy array, JAX's on a JAX array."""
    return (x + x * x + 3.0) * (x * x + x * x.T)


def poly_stored_transpose(x, xt):
    """``poly`` with ``x.T`` given as a second array ``xt``, stored in the order it is read.

    For ``xt = x.T`` (made once, a real transposed copy) it computes ``poly(x)`` exactly, with
    every read in order: the layout that gives the loop the transposed values where it reads
    them. It reads one more array than ``poly``: three arrays of traffic, not two.
    """
    return (x + x * x + 3.0) * (x * x + x * xt)


def poly_without_transpose(x):
    """A different function: the same operations with ``x`` in place of ``x.T``.

    Not ``poly`` (unless ``x`` is symmetric): the same arithmetic and the same bytes as
    ``poly`` with every read contiguous, so that the pair ``poly`` / ``poly_without_transpose``
    measures the price of the strided read alone. It is never a rung of the ladder.
    """
    return (x + x * x + 3.0) * (x * x + x * x)


def jax_copy(x):
    """A compiled copy: read ``x``, write a new array (XLA turns ``x + 0`` into a copy)."""
    return x + 0


def copy_into(destination, source, zero):
    """A compiled copy into a donated ``destination``, as one loop XLA spreads over its threads.

    ``source + zero`` with ``zero`` a runtime scalar stays a fused elementwise loop (XLA runs a
    plain ``copy`` instruction on one thread) and moves exactly a copy's bytes.
    """
    del destination  # donated: the output is written into its buffer
    return source + zero


def triad_into(destination, b, c, s):
    """STREAM's triad, ``b + s * c``, written into a donated ``destination``."""
    del destination
    return b + s * c


def scale_in_place(a, s):
    """``a * s`` written back into the donated ``a``: an update in place, like STREAM's scale
    with its output in its input. ``s`` is a runtime scalar (1.0 here, so the values never
    change), which XLA cannot fold away."""
    return a * s


def _input(n: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


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


def _hlo_facts(jitted, *args) -> dict[str, Any]:
    """What the compiled program says about itself: XLA's cost analysis, and extra copies.

    ``hlo_bytes_accessed`` is XLA's own count of the bytes the program reads and writes;
    ``copy_after_loop`` says whether the result is computed elsewhere and then copied, which
    XLA does when it cannot write a donated input's buffer while still reading it.
    """
    compiled = jitted.lower(*args).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    root = [line for line in compiled.as_text().splitlines() if "ROOT" in line][-1]
    return {"hlo_bytes_accessed": float(cost.get("bytes accessed", 0.0)) if cost else None,
            "copy_after_loop": " copy(" in root}


def _record(timing: helpers.Timing, nbytes: int, profile: dict[str, Any]) -> dict[str, Any]:
    return {**timing_record(timing), "bandwidth_GBps": nbytes / timing.median / 1e9, **profile}


# --- The variants ------------------------------------------------------------------------


class _Evictor:
    """Empties the caches of other data by reading a buffer twice the largest cache's size."""

    def __init__(self) -> None:
        cache = last_level_cache_bytes() or 2**25
        self.buffer = np.ones(max(2 * cache, 2**26) // 4, dtype=np.float32)

    def __call__(self) -> None:
        self.buffer.sum()


class _Threads:
    """NumPy on every core: one slice of the arrays per thread (NumPy releases the GIL)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.pool = ThreadPoolExecutor(count) if count > 1 else None

    def map(self, fn: Callable[[slice], Any], length: int) -> None:
        step = -(-length // self.count)
        parts = [slice(i, min(i + step, length)) for i in range(0, length, step)]
        if self.pool is None:
            for part in parts:
                fn(part)
        else:
            list(self.pool.map(fn, parts))


def _numpy_triad(a, b, c, s, part: slice) -> None:
    """``a = b + s * c`` over ``part``, block by block, so ``s * c`` never goes to memory."""
    scratch = np.empty(TRIAD_BLOCK, dtype=a.dtype)
    for start in range(part.start, part.stop, TRIAD_BLOCK):
        stop = min(start + TRIAD_BLOCK, part.stop)
        block = scratch[: stop - start]
        np.multiply(c[start:stop], s, out=block)
        np.add(b[start:stop], block, out=a[start:stop])


class _Donating:
    """A jitted function that writes into a donated buffer, called again on its own result.

    ``fn(destination, *args)``: each call donates the previous call's result as the next
    destination, as a loop ``a = f(a, ...)`` does; no memory is ever fresh or freed.
    """

    def __init__(self, fn, destination, *args) -> None:
        self.fn = jax.jit(fn, donate_argnums=0, keep_unused=True)
        self.destination, self.args = destination, args

    def __call__(self, _):
        self.destination = self.fn(self.destination, *self.args)
        return self.destination


def _fresh_copy(x):
    return lambda: jax.block_until_ready(jnp.array(x, copy=True))


def bandwidth_variants(n: int, evict: _Evictor, *, numpy: bool = True) -> dict[str, Variant]:
    """STREAM's copy and triad on arrays of ``n * n`` float32 numbers, into existing arrays,
    and an update in place (``a = a * s``), which moves the bytes a copy moves but writes where
    it reads.

    NumPy's on one thread and on every core; JAX's as one jitted loop, which XLA spreads over
    its threads, writing into a donated destination. With ``numpy=False``, JAX's only.
    """
    rng = np.random.default_rng(1)
    b = rng.standard_normal(n * n, dtype=np.float32)
    c = rng.standard_normal(n * n, dtype=np.float32)
    a = np.zeros_like(b)
    s = np.float32(TRIAD_SCALAR)
    found: dict[str, Variant] = {}
    if numpy:
        one, every = _Threads(1), _Threads(_cores())

        def copy(threads):
            return lambda _: threads.map(lambda p: np.copyto(a[p], b[p]), a.size)

        def triad(threads):
            return lambda _: threads.map(lambda p: _numpy_triad(a, b, c, s, p), a.size)

        def update(threads):
            return lambda _: threads.map(lambda p: np.multiply(u[p], one_, out=u[p]), u.size)

        u, one_ = b.copy(), np.float32(1.0)

        found |= {
            "copy_numpy_1_thread": Variant(copy(one), evict=evict),
            "copy_numpy_all_cores": Variant(copy(every), evict=evict),
            "triad_numpy_1_thread": Variant(triad(one), evict=evict),
            "triad_numpy_all_cores": Variant(triad(every), evict=evict),
            "update_numpy_1_thread": Variant(update(one), evict=evict),
            "update_numpy_all_cores": Variant(update(every), evict=evict),
        }
    b_jax, c_jax = jnp.asarray(b), jnp.asarray(c)
    found["copy_jax_all_cores"] = Variant(
        _Donating(copy_into, jnp.zeros_like(b_jax), b_jax, jnp.float32(0)), evict=evict,
        keep=True)
    found["triad_jax_all_cores"] = Variant(
        _Donating(triad_into, jnp.zeros_like(b_jax), b_jax, c_jax, jnp.float32(s)),
        evict=evict, keep=True)
    found["update_jax_all_cores"] = Variant(
        _Donating(scale_in_place, jnp.array(b_jax, copy=True), jnp.float32(1)), evict=evict,
        keep=True)
    return found


def stored_transpose(x):
    """``x.T`` as an array of its own, laid out in the order ``poly_stored_transpose`` reads
    it: a real transposed copy, made once, outside any clock."""
    return jax.block_until_ready(jnp.array(x.T, copy=True))


def _with_stored_transpose(fn, xt):
    """``fn(x, xt)`` as a function of ``x`` alone, for a :class:`Variant`."""
    return lambda x: fn(x, xt)


def jax_variants(x, evict: _Evictor | None) -> dict[str, Variant]:
    """The compiled variants of the ladder: ``poly`` as written and with ``x.T`` stored as a
    second input, the different function without the transpose, each donated or not, and a
    compiled copy into a new array."""
    xt = stored_transpose(x)
    found = {}
    for suffix, fn in (("", poly), ("_without_transpose", poly_without_transpose)):
        jitted = jax.jit(fn)
        found[f"jax_jit{suffix}"] = Variant(jitted, lambda: x, evict)
        donated = jax.jit(fn, donate_argnums=0)
        found[f"jax_jit{suffix}_donated"] = Variant(donated, _fresh_copy(x), evict, keep=True)
    # x.T stored: the same x each call, or a fresh copy of x to donate; xt is only read.
    found["jax_jit_stored_transpose"] = Variant(
        _with_stored_transpose(jax.jit(poly_stored_transpose), xt), lambda: x, evict)
    found["jax_jit_stored_transpose_donated"] = Variant(
        _with_stored_transpose(jax.jit(poly_stored_transpose, donate_argnums=0), xt),
        _fresh_copy(x), evict, keep=True)
    found["copy_jax_jit_new_array"] = Variant(jax.jit(jax_copy), lambda: x, evict)
    return found


def jax_hlo(x) -> dict[str, dict[str, Any]]:
    found = {}
    for suffix, fn in (("", poly), ("_without_transpose", poly_without_transpose)):
        found[f"jax_jit{suffix}"] = _hlo_facts(jax.jit(fn), x)
        found[f"jax_jit{suffix}_donated"] = _hlo_facts(jax.jit(fn, donate_argnums=0), x)
    xt = stored_transpose(x)
    found["jax_jit_stored_transpose"] = _hlo_facts(jax.jit(poly_stored_transpose), x, xt)
    found["jax_jit_stored_transpose_donated"] = _hlo_facts(
        jax.jit(poly_stored_transpose, donate_argnums=0), x, xt)
    found["copy_jax_jit_new_array"] = _hlo_facts(jax.jit(jax_copy), x)
    return found


def function_of(name: str) -> str:
    """What a variant of the ladder computes (``FUNCTIONS``), its ``_huge_pages`` aside."""
    base = name.removesuffix("_huge_pages").removesuffix("_donated")
    return FUNCTIONS[max((k for k in FUNCTIONS if base.startswith(k)), key=len)]


def arrays_moved(name: str) -> int:
    """The arrays of ``n * n`` numbers a variant must read and write at least, by STREAM's
    count: two (read ``x``, write the result), three with ``x.T`` stored (``xt`` read too)."""
    return 3 if "stored_transpose" in name else 2


def equals_poly(variants: dict[str, Variant], x) -> dict[str, bool]:
    """Whether each variant's result equals ``poly(x)`` (float32 rounding aside): one call of
    each, outside any clock. The copy is left out: it computes no function of ``poly``'s."""
    expected = np.asarray(jax.jit(poly)(jnp.asarray(x)))
    found = {}
    for name, variant in variants.items():
        if name.startswith("copy_"):
            continue
        result = np.asarray(variant.call(variant.prepare()))
        found[name] = bool(np.allclose(result, expected, rtol=1e-4, atol=1e-3))
    return found


# --- The huge-page process ---------------------------------------------------------------


class _Remote:
    """A variant that lives in the huge-page process: the same interface, over a pipe."""

    def __init__(self, worker: _Worker, name: str) -> None:
        self.worker, self.name = worker, name

    def run(self, calls: int) -> float:
        return self.worker.ask({"run": self.name, "calls": calls})["seconds"]

    def profile(self, calls: int = 3) -> dict[str, Any]:
        return self.worker.ask({"profile": self.name, "calls": calls})


class _Worker:
    """``python -m benchmarks.elementwise --worker SPEC`` with extra environment variables.

    ``SPEC`` is ``ladder:N`` (the ladder's compiled variants and JAX's bandwidth kernels at
    size ``N``) or ``sizes:N1,N2,...`` (NumPy and ``jax.jit`` at each size, named
    ``numpy_N`` and ``jax_jit_N``). The process builds its variants, says which, then times
    one on each request.
    """

    def __init__(self, spec: str, env: dict[str, str] | None = None,
                 one_core: bool = False) -> None:
        self.errors = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.elementwise", "--worker", spec,
             *(["--one-core"] if one_core else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, text=True,
            env={**os.environ, **(env or {})})
        self.hello = self._read()

    def _read(self) -> dict[str, Any]:
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            self.errors.seek(0)
            raise RuntimeError("a worker process failed:\n" + self.errors.read()[-3000:])
        return json.loads(line)

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._read()

    def variants(self) -> dict[str, _Remote]:
        return {name: _Remote(self, name) for name in self.hello["variants"]}

    def close(self) -> None:
        if self.process.poll() is None:
            self.ask({"quit": True})
            self.process.wait()
        self.errors.close()


def serve(spec: str) -> None:
    """A worker process's side (see ``_Worker``): its variants, timed on request."""
    kind, _, sizes = spec.partition(":")
    if kind == "ladder":
        n = int(sizes)
        x = jnp.asarray(_input(n))
        evict = _Evictor()
        functions = jax_variants(x, evict)
        variants = {**functions, **bandwidth_variants(n, evict, numpy=False)}
        hello = {"hlo": jax_hlo(x), "equals_poly": equals_poly(functions, x)}
    else:
        variants, hello = {}, {"jax_jit_loop_partitions": {}}
        for n in map(int, sizes.split(",")):
            x_np = _input(n)
            x = jnp.asarray(x_np)
            variants[f"numpy_{n}"] = Variant(poly, lambda x_np=x_np: x_np)
            variants[f"jax_jit_{n}"] = Variant(jax.jit(poly), lambda x=x: x)
            hello["jax_jit_loop_partitions"][n] = _loop_partitions(poly, x)
    print(json.dumps({"variants": list(variants), **hello}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if "quit" in request:
            print(json.dumps({"bye": True}), flush=True)
            return
        if "run" in request:
            answer = {"seconds": variants[request["run"]].run(request["calls"])}
        else:
            answer = variants[request["profile"]].profile(request["calls"])
        print(json.dumps(answer), flush=True)


# --- The three parts ---------------------------------------------------------------------


def measure_size(n: int, rounds: int, probes: dict[str, _Worker]) -> dict[str, Any]:
    """NumPy, eager JAX and jax.jit at one size, next to copies; one-off costs.

    The probes' NumPy and ``jax.jit`` at this size (in their own processes) are timed in the
    same rounds; their records come back under ``"probes"``.
    """
    x_np = _input(n)
    x = jnp.asarray(x_np)
    # One-off costs first, before anything else has run at this shape: compiling the jitted
    # functions, and the first eager call, which compiles each operation for the new shape.
    # Each happens once, so each is a single measurement.
    one_off = {
        "jax_jit_compile_s": _compile_seconds(poly, x),
        "jax_eager_first_call_s": seconds(lambda: jax.block_until_ready(poly(x))),
    }
    poly_jit = jax.jit(poly)
    # The variants compute the same thing (float32 rounding aside).
    assert np.allclose(np.asarray(poly_jit(x)), poly(x_np), rtol=1e-4, atol=1e-3)
    destination = np.empty_like(x_np)
    every = _Threads(_cores())
    variants = {
        "numpy": Variant(poly, lambda: x_np),
        "jax_eager": Variant(poly, lambda: x),
        "jax_jit": Variant(poly_jit, lambda: x),
        "copy_numpy_1_thread": Variant(lambda a: np.copyto(destination, a), lambda: x_np),
        "copy_numpy_all_cores": Variant(
            lambda a: every.map(lambda p: np.copyto(destination[p], a[p]), n), lambda: x_np),
        "copy_jax_all_cores": Variant(
            _Donating(copy_into, jnp.zeros_like(x), x, jnp.float32(0)), keep=True),
    }
    remote = {(probe, name): worker.variants()[f"{name}_{n}"]
              for probe, worker in probes.items() for name in ("numpy", "jax_jit")}
    timings = interleaved({**variants, **remote}, rounds)
    nbytes = 2 * x_np.nbytes  # read x once, write the result once
    return {
        "n": n,
        "bytes_moved": nbytes,
        "variants": {name: _record(timings[name], nbytes, variants[name].profile())
                     for name in variants},
        "one_off_s": one_off,
        "jax_jit_loop_partitions": _loop_partitions(poly, x),
        "probes": {probe: {
            "n": n,
            "variants": {name: _record(timings[(probe, name)], nbytes,
                                       remote[(probe, name)].profile())
                         for name in ("numpy", "jax_jit")},
            "jax_jit_loop_partitions":
                probes[probe].hello["jax_jit_loop_partitions"][str(n)],
        } for probe in probes},
    }


def _glibc() -> bool:
    """Whether this is Linux with glibc 2.35 or later, whose ``malloc`` the probes configure."""
    libc, version = platform.libc_ver()
    return (sys.platform == "linux" and libc == "glibc"
            and tuple(map(int, version.split("."))) >= (2, 35))


def _probes(sizes: tuple[int, ...]) -> dict[str, _Worker]:
    """NumPy and compiled JAX at every size in two other processes, timed with the rest.

    ``allocator_keeps_memory`` (Linux with glibc 2.35 or later): glibc's ``malloc`` told to
    keep the memory it has (``KEEP_MEMORY``). By default it gives freed memory back to the OS,
    so the next call's arrays can come back as fresh pages, each with a page fault; kept, the
    memory is reused, for both variants alike.

    ``one_core`` (Linux machines with several cores): a process allowed one core only. XLA's
    CPU backend splits a large fused loop into parts that run on all the cores it may use
    (``jax_jit_loop_partitions``), while NumPy's elementwise operations use one thread; on one
    core XLA compiles the loop in one piece, so this compares one thread with one thread.

    Each setting is read when a process starts (glibc's, and the cores XLA counts), so each
    probe is a process of its own, driven round by round from this one.
    """
    spec = "sizes:" + ",".join(map(str, sizes))
    probes = {}
    if _glibc():
        probes["allocator_keeps_memory"] = _Worker(spec, KEEP_MEMORY)
    if hasattr(os, "sched_setaffinity") and _cores() >= 2:
        probes["one_core"] = _Worker(spec, one_core=True)
    return probes


def ladder_and_bandwidth(n: int, rounds: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The memory bandwidth and the ladder at size ``n``, measured together (CPU backend)."""
    x_np = _input(n)
    x = jnp.asarray(x_np)
    evict = _Evictor()
    nbytes = 2 * x_np.nbytes  # poly's least traffic: one read of x, one write of the result

    kernels = bandwidth_variants(n, evict)
    functions = {
        "numpy": Variant(poly, lambda: x_np, evict),
        "numpy_without_transpose": Variant(poly_without_transpose, lambda: x_np, evict),
        "jax_eager": Variant(poly, lambda: x, evict),
        **jax_variants(x, evict),
    }
    # What each variant computes, checked once: every rung must compute poly (donation
    # changes where the result goes, not what it is; x.T stored changes where it is read).
    equal = equals_poly(functions, x_np)
    hlo = jax_hlo(x)
    worker = _Worker(f"ladder:{n}", HUGE_PAGES) if _glibc() else None
    try:
        remote = worker.variants() if worker else {}
        suffixed = {f"{name}_huge_pages": v for name, v in remote.items()}
        if worker:
            hlo |= {f"{name}_huge_pages": facts for name, facts in worker.hello["hlo"].items()
                    if f"{name}_huge_pages" in suffixed}
            equal |= {f"{name}_huge_pages": same
                      for name, same in worker.hello["equals_poly"].items()}
        everything = {**kernels, **functions, **suffixed}
        timings = interleaved(everything, rounds)
        profiles = {name: v.profile() for name, v in everything.items()}
    finally:
        if worker:
            worker.close()

    kernel_bytes = {name: (3 if name.startswith("triad") else 2) * x_np.nbytes
                    for name in everything if name.startswith(("copy_", "triad_", "update_"))
                    and "new_array" not in name}
    bandwidth = {name: _record(timings[name], kernel_bytes[name], profiles[name])
                 for name in kernel_bytes}

    def fastest(kind: str) -> str:  # the fastest all-core kernel of a kind
        found = [k for k in bandwidth if k.startswith(kind) and "all_cores" in k]
        return max(found, key=lambda k: bandwidth[k]["bandwidth_GBps"])

    copy, triad, update = fastest("copy"), fastest("triad"), fastest("update")
    limit = bandwidth[copy]["bandwidth_GBps"]
    memory = {
        "n": n,
        "array_bytes": x_np.nbytes,
        "threads": _cores(),
        "bytes_counted": "STREAM's count: copy and update 2 arrays, triad 3 arrays per pass",
        "kernels": bandwidth,
        # The limit for a function that reads one array and writes another: all cores.
        "copy_GBps": limit,
        "copy_source": copy,
        "copy_1_thread_GBps": bandwidth["copy_numpy_1_thread"]["bandwidth_GBps"],
        "triad_GBps": bandwidth[triad]["bandwidth_GBps"],
        "triad_source": triad,
        # The same bytes written back where they were read: the limit for an update in place.
        "update_GBps": bandwidth[update]["bandwidth_GBps"],
        "update_source": update,
    }
    def variant_record(name: str) -> dict[str, Any]:
        moved = arrays_moved(name) * x_np.nbytes
        median = timings[name].median
        return {
            **_record(timings[name], moved, profiles[name]), **hlo.get(name, {}),
            "function": function_of(name),
            "equals_poly": equal.get(name),  # None for the copy
            "bytes_moved": moved,
            # The variant's bandwidth, its own bytes counted, as a share of the copy's.
            "fraction_of_copy_bandwidth": moved / median / 1e9 / limit,
            # Stricter for a variant that reads more than poly must: poly's least bytes
            # (read x, write the result) over its time, as a share of the copy's bandwidth.
            "least_bytes_fraction_of_copy_bandwidth": nbytes / median / 1e9 / limit,
        }

    variants = {name: variant_record(name) for name in everything if name not in kernel_bytes}
    rungs = [(name, change) for name, change in LADDER if name in variants]
    if not worker:  # no huge pages: the same path without that rung
        rungs = [(name.removesuffix("_huge_pages"), change) for name, change in LADDER
                 if name != "jax_jit_huge_pages" and name.removesuffix("_huge_pages")
                 in variants]
    wrong = [name for name, _ in rungs if not variants[name]["equals_poly"]]
    assert not wrong, f"rungs of the ladder that do not compute poly: {wrong}"
    ladder = {
        "n": n,
        "bytes_moved": nbytes,
        "bytes_counted": "each variant's bytes_moved: 2 arrays (read x, write the result), "
                         "3 with x.T stored as a second input (read x and xt, write)",
        "huge_pages_environment": HUGE_PAGES if worker else None,
        "rungs": [{"name": name, "change": change} for name, change in rungs],
        "variants": variants,
    }
    return memory, ladder


def run(quick: bool = False) -> dict[str, Any]:
    """The whole elementwise benchmark as a JSON-ready dict."""
    sizes = QUICK_SIZES if quick else FULL_SIZES
    rounds = 3 if quick else 9
    probes = _probes(sizes)
    try:
        results = [measure_size(n, rounds, probes) for n in sizes]
    finally:
        for worker in probes.values():
            worker.close()
    found: dict[str, list[dict[str, Any]]] = {probe: [] for probe in probes}
    for r in results:
        for probe, probed in r.pop("probes").items():
            found[probe].append(probed)
    record: dict[str, Any] = {
        "function": "(x + x*x + 3) * (x*x + x*x.T), float32, x of shape (n, n)",
        "bytes_moved": "2 * n * n * 4: one read of x and one write of the result",
        "sizes": list(sizes),
        "results": results,
        "allocator_keeps_memory": {"environment": KEEP_MEMORY,
                                   "results": found["allocator_keeps_memory"]}
        if "allocator_keeps_memory" in found else None,
        "one_core": {"cores": 1, "results": found["one_core"]}
        if "one_core" in found else None,
        "memory_bandwidth": None,
        "ladder": None,
    }
    largest = results[-1]["variants"]
    summary: dict[str, Any] = {
        "largest_n": sizes[-1],
        "jit_speedup_vs_numpy": largest["numpy"]["median_s"] / largest["jax_jit"]["median_s"],
    }
    if jax.default_backend() == "cpu":  # the memory of the machine that runs JAX
        memory, ladder = ladder_and_bandwidth(sizes[-1], 5 if quick else 15)
        record["memory_bandwidth"], record["ladder"] = memory, ladder
        rungs = [rung["name"] for rung in ladder["rungs"]]
        steps = ladder["variants"]
        # The best rung: the fastest share of the copy bandwidth, its own bytes counted.
        # Every rung computes poly (checked above), so the verdict is about poly.
        best = max(rungs, key=lambda name: steps[name]["fraction_of_copy_bandwidth"])
        summary |= {
            # The ladder's numbers: measured in the same rounds as the bandwidth.
            "jit_speedup_vs_numpy": steps["numpy"]["median_s"] / steps["jax_jit"]["median_s"],
            "copy_bandwidth_GBps": memory["copy_GBps"],
            "triad_bandwidth_GBps": memory["triad_GBps"],
            "copy_bandwidth_1_thread_GBps": memory["copy_1_thread_GBps"],
            "update_in_place_bandwidth_GBps": memory["update_GBps"],
            "jit_fraction_of_copy_bandwidth": steps["jax_jit"]["fraction_of_copy_bandwidth"],
            "best_rung": best,
            "best_fraction_of_copy_bandwidth": steps[best]["fraction_of_copy_bandwidth"],
            "best_least_bytes_fraction_of_copy_bandwidth":
                steps[best]["least_bytes_fraction_of_copy_bandwidth"],
            "best_fraction_of_update_in_place_bandwidth":
                steps[best]["bandwidth_GBps"] / memory["update_GBps"],
        }
    record["summary"] = summary
    return record


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--one-core", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one_core:  # before JAX starts its CPU backend, which counts the cores it may use
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    if args.worker:
        serve(args.worker)
        return
    print(json.dumps(run(quick=args.quick)))


if __name__ == "__main__":
    main()
