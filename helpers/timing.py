"""An honest timer for JAX code (chapter 2, "Device arrays and asynchronous dispatch").

JAX dispatches work asynchronously and compiles on the first call, so a naive
``time.perf_counter()`` around a call measures the wrong thing. :func:`timeit` warms the
function up first, waits for every result with :func:`jax.block_until_ready`, repeats the
measurement and reports the median with its spread.

:func:`timeit_interleaved` and :func:`median_ratio` compare functions on a busy machine.
Defined in ``book/07_jit_control_flow.ipynb``, section "What XLA removes, and why to jit the
widest scope": the functions are timed in rounds, one short run of each per round, and a
ratio is taken within each round, where both sides met the same load; its median over the
rounds ignores the few rounds a burst of load disturbed. The code is the chapter's, unchanged
(``tests/test_helpers_are_the_chapters_code.py`` checks it).

:func:`faults_per_call` counts the page faults a call takes, the cost of fresh memory that a
time alone hides. Defined in ``book/01_why_jax.ipynb``, section "A first measured
comparison", and used by the chapters after it; the code is the chapter's, unchanged.
"""

import math
import numbers
import resource
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jax

__all__ = [
    "Timing",
    "faults_per_call",
    "format_duration",
    "format_ratio",
    "median_ratio",
    "timeit",
    "timeit_interleaved",
    "timing_table",
]

_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def format_duration(seconds: float) -> str:
    """Format a duration with three significant digits and a readable unit.

    >>> format_duration(0.000123)
    '123 µs'
    """
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real):
        raise TypeError(f"seconds must be a number, got {type(seconds).__name__}")
    try:
        seconds = float(seconds) + 0.0  # + 0.0 turns -0.0 into 0.0
    except OverflowError:
        raise ValueError(f"seconds must be a finite number, got {seconds!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"seconds must be a non-negative finite number, got {seconds!r}")
    for unit, scale in _UNITS:
        # Round first, then choose the unit: 0.9996 ms is "1 ms", not "1e+03 µs".
        text = f"{seconds / scale:.3g}"
        value = float(text)
        if value >= 1 or unit == "ns":
            # :g writes 1230 rather than 1.23e+03; near the float limit keep the exponent form.
            return f"{value:g} {unit}" if math.isfinite(value) else f"{text} {unit}"
    raise AssertionError("unreachable: the last unit always returns")


@dataclass(frozen=True)
class Timing:
    """Seconds per call measured in each of several runs of the same function."""

    per_call: tuple[float, ...]
    """Seconds per call, one entry per run (each run averages ``calls_per_run`` calls)."""
    calls_per_run: int

    def __post_init__(self) -> None:
        if not self.per_call:
            raise ValueError("a Timing needs at least one run")
        if self.calls_per_run < 1:
            raise ValueError(f"calls_per_run must be at least 1, got {self.calls_per_run}")

    @property
    def median(self) -> float:
        """Median seconds per call over the runs: robust to a run the OS interrupted."""
        return statistics.median(self.per_call)

    @property
    def fastest(self) -> float:
        """The fastest run's seconds per call: load from other programs only adds time."""
        return min(self.per_call)

    @property
    def spread(self) -> float:
        """Half the interquartile range of the runs, in seconds (0 for fewer than 2 runs)."""
        if len(self.per_call) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.per_call, n=4, method="inclusive")
        return max(0.0, (q3 - q1) / 2)  # rounding can order near-equal quartiles wrongly

    def __str__(self) -> str:
        runs = len(self.per_call)
        return (
            f"{format_duration(self.median)} ± {format_duration(self.spread)} per call "
            f"(median ± half IQR of {runs} run{'s' * (runs != 1)}, "
            f"{self.calls_per_run} call{'s' * (self.calls_per_run != 1)} each)"
        )


def _positive_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")


def _run(fn: Callable[..., Any], args: tuple, kwargs: dict, calls: int) -> float:
    """Seconds per call for ``calls`` calls, waiting for each result before the next."""
    start = time.perf_counter()
    for _ in range(calls):
        jax.block_until_ready(fn(*args, **kwargs))
    return (time.perf_counter() - start) / calls


def timeit(
    fn: Callable[..., Any],
    *args: Any,
    repeat: int = 7,
    calls: int | None = None,
    warmup: int = 1,
    min_run_seconds: float = 0.02,
    **kwargs: Any,
) -> Timing:
    """Time ``fn(*args, **kwargs)`` the way JAX code must be timed.

    1. ``warmup`` calls first, not timed: the first call of a jitted function traces and
       compiles it, which is a one-off cost and not its run time.
    2. Every call is followed by :func:`jax.block_until_ready`, so the clock stops when the
       result exists, not when the work was merely queued. Outputs that are not JAX arrays
       (NumPy arrays, Python numbers) pass through unchanged, so NumPy code is timed alike.
    3. ``repeat`` runs of ``calls`` calls each. When ``calls`` is None it is chosen (1, 2, 5,
       10, 20, ...) so that one run lasts at least ``min_run_seconds``: timer resolution and
       loop overhead then stay negligible.

    Returns a :class:`Timing`; print it, or read its ``median`` and ``spread`` in seconds.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    _positive_int("repeat", repeat, 1)
    _positive_int("warmup", warmup, 0)
    if calls is not None:
        _positive_int("calls", calls, 1)
    if isinstance(min_run_seconds, bool) or not isinstance(min_run_seconds, numbers.Real):
        raise TypeError("min_run_seconds must be a number")
    if not (math.isfinite(min_run_seconds) and min_run_seconds >= 0):
        raise ValueError(f"min_run_seconds must be non-negative and finite, got {min_run_seconds}")

    for _ in range(warmup):
        jax.block_until_ready(fn(*args, **kwargs))
    if calls is None:
        calls = _calibrate(fn, args, kwargs, min_run_seconds)
    return Timing(tuple(_run(fn, args, kwargs, calls) for _ in range(repeat)), calls)


def _calibrate(fn: Callable[..., Any], args: tuple, kwargs: dict, min_run_seconds: float) -> int:
    """The smallest count in 1, 2, 5, 10, 20, 50, ... whose run lasts ``min_run_seconds``."""
    calls = 1
    while True:
        for factor in (1, 2, 5):
            count = calls * factor
            if _run(fn, args, kwargs, count) * count >= min_run_seconds:
                return count
        calls *= 10


def timeit_interleaved(fns, *args, rounds=7):
    """Time the functions of the dict `fns` in turns, one short run each per round.

    Returns one helpers.Timing per name, whose `per_call` lists the rounds in order."""
    # One untimed call each (compilation), and enough calls per run for 20 ms or more.
    calls = {name: timeit(fn, *args, repeat=1).calls_per_run
             for name, fn in fns.items()}
    runs = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            run = timeit(fn, *args, repeat=1, calls=calls[name], warmup=0)
            runs[name].append(run.median)
    return {name: Timing(tuple(runs[name]), calls[name]) for name in fns}


def faults_per_call(fn, *args, calls=10):
    """Minor page faults of this process per call of fn(*args), after a warm-up."""
    jax.block_until_ready(fn(*args))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        jax.block_until_ready(fn(*args))
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def median_ratio(slower, faster):
    """The median over rounds of slower / faster, both Timings from one interleaving."""
    pairs = zip(slower.per_call, faster.per_call, strict=True)
    return statistics.median(s / f for s, f in pairs)


def timing_table(
    timings: Mapping[str, Timing], baseline: str | None = None, *, fastest: bool = False
) -> str:
    """A plain-text table of timings with each row's speed relative to ``baseline``.

    ``baseline`` defaults to the first row. A speed of ``4.0x`` means four times faster
    than the baseline (its median divided by this row's median), ``0.25x`` four times slower;
    speeds carry two significant digits (``12x``, ``4.0x``, ``0.041x``). ``fastest=True``
    adds a column with each row's fastest run, :attr:`Timing.fastest`.
    """
    if not timings:
        raise ValueError("timings is empty: give at least one name -> Timing")
    for name, timing in timings.items():
        if not isinstance(timing, Timing):
            raise TypeError(f"timings[{name!r}] is a {type(timing).__name__}, not a Timing")
    baseline = next(iter(timings)) if baseline is None else baseline
    if baseline not in timings:
        raise KeyError(f"baseline {baseline!r} is not one of {list(timings)}")
    reference = timings[baseline].median
    width = max(len(name) for name in timings)
    extra = f"  {'fastest':>9}" if fastest else ""
    lines = [
        f"{'':{width}}  {'median':>9}  {'± half IQR':>10}{extra}  {'speed vs ' + baseline}"
    ]
    for name, timing in timings.items():
        extra = f"  {format_duration(timing.fastest):>9}" if fastest else ""
        lines.append(
            f"{name:{width}}  {format_duration(timing.median):>9}  "
            f"{format_duration(timing.spread):>10}{extra}  {_ratio(reference, timing.median)}"
        )
    return "\n".join(lines)


def _ratio(reference: float, median: float) -> str:
    if median <= 0:
        return "too fast to resolve"
    return format_ratio(reference / median)


def format_ratio(ratio: float) -> str:
    """A speed ratio with two significant digits, so that neither 0.04x nor 4125x hides
    behind a rounding: ``0.63x``, ``6.2x``, ``41x``, ``4125x``."""
    if ratio >= 9.95:
        return f"{ratio:.0f}x"
    if ratio >= 0.995 or ratio <= 0:
        return f"{ratio:.1f}x"
    rounded = float(f"{ratio:.2g}")  # then as many decimals as two significant digits need
    return f"{rounded:.{1 - math.floor(math.log10(rounded))}f}x"
