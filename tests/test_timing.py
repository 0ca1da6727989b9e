"""Unit tests of helpers.timing."""

from __future__ import annotations

import math
import time

import jax.numpy as jnp
import numpy as np
import pytest

from helpers import Timing, format_duration, format_ratio, timeit, timing_table


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (1.5, "1.5 s"), (0.0123, "12.3 ms"), (4.56e-6, "4.56 µs"), (7e-9, "7 ns"), (0, "0 ns"),
        # Unit boundaries, and values that round up into the next unit.
        (1.0, "1 s"), (1e-3, "1 ms"), (1e-6, "1 µs"), (1e-9, "1 ns"), (999.5e-9, "999 ns"),
        (0.0009996, "1 ms"), (5e-324, "4.94e-315 ns"),
    ],
)
def test_format_duration_picks_a_readable_unit(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    "bad",
    [-1.0, -1, -5e-324, -math.inf, math.inf, math.nan,
     pytest.param(10**400, id="int-too-large-for-a-float")],
)
def test_format_duration_rejects_negative_and_non_finite_durations(bad):
    with pytest.raises(ValueError, match="seconds must be a (non-negative )?finite number"):
        format_duration(bad)


@pytest.mark.parametrize("bad", ["1 s", None, True, b"1", [1.0]])
def test_format_duration_rejects_non_numbers(bad):
    with pytest.raises(TypeError, match=f"seconds must be a number, got {type(bad).__name__}"):
        format_duration(bad)


def test_timing_statistics():
    timing = Timing((1.0, 2.0, 3.0, 4.0, 100.0), calls_per_run=10)
    assert timing.median == 3.0
    assert timing.spread == pytest.approx((4.0 - 2.0) / 2)  # quartiles 2 and 4
    assert Timing((0.5,), 1).spread == 0.0
    assert str(Timing((0.002,), 3)) == (
        "2 ms ± 0 ns per call (median ± half IQR of 1 run, 3 calls each)"
    )


def test_timing_rejects_empty_runs():
    with pytest.raises(ValueError, match="at least one run"):
        Timing((), 1)
    with pytest.raises(ValueError, match="calls_per_run must be at least 1"):
        Timing((1.0,), 0)


def test_timeit_measures_sleep_and_excludes_warmup():
    calls = []

    def slow(x):
        calls.append(x)
        # The first call stands for compilation: far slower than the rest.
        time.sleep(0.2 if len(calls) == 1 else 0.01)
        return x

    timing = timeit(slow, 1, repeat=3, calls=2)
    assert len(calls) == 1 + 3 * 2  # one warm-up call, then 3 runs of 2 calls
    assert 0.009 < timing.median < 0.05  # the 0.2 s warm-up is not in the median
    assert timing.calls_per_run == 2 and len(timing.per_call) == 3


def test_timeit_waits_for_jax_results():
    x = jnp.ones((300, 300))
    timing = timeit(lambda a: a @ a, x, repeat=2)
    assert timing.median > 0 and timing.calls_per_run >= 1


def test_timeit_chooses_calls_so_a_run_lasts_long_enough():
    timing = timeit(np.add, 1.0, 2.0, repeat=2, min_run_seconds=0.01)
    assert timing.calls_per_run >= 10  # one np.add takes far less than a millisecond
    assert timing.median * timing.calls_per_run > 0.001


def test_timeit_passes_keyword_arguments():
    timing = timeit(np.sum, np.ones(4), axis=0, repeat=1, calls=1)
    assert len(timing.per_call) == 1


@pytest.mark.parametrize(("warmup", "repeat", "calls"), [(0, 1, 1), (2, 3, 4)])
def test_timeit_calls_fn_warmup_plus_repeat_times_calls(warmup, repeat, calls):
    seen = []

    def fn(*args, **kwargs):
        seen.append((args, kwargs))
        return np.float32(1.0)

    timing = timeit(fn, 1, "a", repeat=repeat, calls=calls, warmup=warmup, key=None)
    assert seen == [((1, "a"), {"key": None})] * (warmup + repeat * calls)
    assert len(timing.per_call) == repeat and timing.calls_per_run == calls
    assert all(t >= 0 for t in timing.per_call)


def _must_not_run(*args, **kwargs):
    raise AssertionError("timeit called fn although an argument was invalid")


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"repeat": 0}, ValueError, "repeat must be at least 1, got 0"),
        ({"repeat": 2.5}, TypeError, "repeat must be an int, got float"),
        ({"repeat": True}, TypeError, "repeat must be an int, got bool"),
        ({"calls": 0}, ValueError, "calls must be at least 1"),
        ({"calls": "3"}, TypeError, "calls must be an int, got str"),
        ({"warmup": -1}, ValueError, "warmup must be at least 0"),
        ({"warmup": None}, TypeError, "warmup must be an int, got NoneType"),
        ({"min_run_seconds": -0.1}, ValueError, "min_run_seconds must be non-negative"),
        ({"min_run_seconds": math.nan}, ValueError, "non-negative and finite"),
        ({"min_run_seconds": math.inf}, ValueError, "non-negative and finite"),  # never ends
        ({"min_run_seconds": "0.1"}, TypeError, "min_run_seconds must be a number"),
        ({"min_run_seconds": True}, TypeError, "min_run_seconds must be a number"),
    ],
)
def test_timeit_rejects_bad_arguments_before_calling_fn(kwargs, error, message):
    with pytest.raises(error, match=message):
        timeit(_must_not_run, **kwargs)


def test_timeit_rejects_a_non_callable():
    with pytest.raises(TypeError, match="fn must be callable"):
        timeit(42)


def test_timing_table_reports_speed_relative_to_the_baseline():
    table = timing_table({"slow": Timing((0.004,), 1), "fast": Timing((0.001,), 1)})
    lines = table.splitlines()
    assert "speed vs slow" in lines[0]
    assert lines[1].startswith("slow") and lines[1].endswith("1.0x")
    assert lines[2].startswith("fast") and lines[2].endswith("4.0x")
    timings = {"slow": Timing((0.004,), 1), "fast": Timing((0.001,), 1)}
    assert timing_table(timings, baseline="fast").splitlines()[1].endswith("0.25x")
    many = {"slow": Timing((4.125,), 1), "fast": Timing((0.001,), 1)}
    assert timing_table(many).splitlines()[2].endswith("4125x")  # no decimals past 10x


@pytest.mark.parametrize(
    ("ratio", "speed"),
    [
        (12.4, "12x"), (9.96, "10x"), (9.94, "9.9x"), (0.996, "1.0x"), (0.994, "0.99x"),
        (0.0412, "0.041x"), (0.00123, "0.0012x"), (0.0, "0.0x"),
    ],
)
def test_timing_table_gives_speeds_to_two_significant_digits(ratio, speed):
    # The baseline's median is `ratio` seconds and the row's 1 s: the row is `ratio` x faster.
    lines = timing_table({"base": Timing((ratio,), 1), "row": Timing((1.0,), 1)}).splitlines()
    column = lines[0].index("speed vs base")  # the speeds are aligned under the header
    assert lines[1][column:] == ("1.0x" if ratio else "too fast to resolve")
    assert lines[2][column:] == speed
    assert lines[2].split()[:3] == ["row", "1", "s"]  # the median, as format_duration gives it


def test_timing_table_rejects_bad_input():
    with pytest.raises(ValueError, match="empty"):
        timing_table({})
    with pytest.raises(TypeError, match="not a Timing"):
        timing_table({"a": 1.0})
    with pytest.raises(KeyError, match="baseline"):
        timing_table({"a": Timing((1.0,), 1)}, baseline="b")


@pytest.mark.parametrize(
    ("ratio", "text"),
    [(4125.3, "4125x"), (12.4, "12x"), (6.24, "6.2x"), (0.634, "0.63x"), (0.0412, "0.041x")],
)
def test_format_ratio_is_the_tables_speed_column(ratio, text):
    assert format_ratio(ratio) == text
    table = timing_table({"base": Timing((ratio,), 1), "row": Timing((1.0,), 1)})
    assert table.splitlines()[2].endswith(text)
