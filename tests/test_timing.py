"""Unit tests of helpers.timing."""

from __future__ import annotations

import time

import jax.numpy as jnp
import numpy as np
import pytest

from helpers import Timing, format_duration, timeit, timing_table


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(1.5, "1.5 s"), (0.0123, "12.3 ms"), (4.56e-6, "4.56 µs"), (7e-9, "7 ns"), (0, "0 ns")],
)
def test_format_duration_picks_a_readable_unit(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize("bad", [-1.0, float("nan")])
def test_format_duration_rejects_negative_and_nan(bad):
    with pytest.raises(ValueError, match="non-negative"):
        format_duration(bad)


def test_format_duration_rejects_non_numbers():
    with pytest.raises(TypeError, match="number"):
        format_duration("1 s")


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


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"repeat": 0}, ValueError, "repeat must be at least 1"),
        ({"repeat": 2.5}, TypeError, "repeat must be an int"),
        ({"calls": 0}, ValueError, "calls must be at least 1"),
        ({"warmup": -1}, ValueError, "warmup must be at least 0"),
        ({"min_run_seconds": -0.1}, ValueError, "non-negative"),
    ],
)
def test_timeit_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        timeit(np.add, 1, 2, **kwargs)


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


def test_timing_table_rejects_bad_input():
    with pytest.raises(ValueError, match="empty"):
        timing_table({})
    with pytest.raises(TypeError, match="not a Timing"):
        timing_table({"a": 1.0})
    with pytest.raises(KeyError, match="baseline"):
        timing_table({"a": Timing((1.0,), 1)}, baseline="b")
