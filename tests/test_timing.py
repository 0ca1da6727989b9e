"""Unit tests of helpers.timing."""

from __future__ import annotations

import math
import mmap
import time
import types

import jax.numpy as jnp
import numpy as np
import pytest

from helpers import (
    Timing,
    faults_per_call,
    format_duration,
    format_ratio,
    median_ratio,
    timeit,
    timeit_interleaved,
    timing_table,
)


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


# What timeit promises, on a fake clock: it waits for every result, warm-ups included, and
# reports seconds per call. Durations are multiples of 1/64 s, so the sums are exact.

TICK = 1 / 64


class FakeClock:
    """Stands in for the module ``time`` of helpers.timing: ``perf_counter`` reads ``now``."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


class AsyncResult:
    """What a JAX call returns before its work is done: the work ends when it is waited for."""

    def __init__(self, job, clock, events):
        self.job, self.clock, self.events = job, clock, events

    def block_until_ready(self):
        self.clock.now += 3 * TICK  # the computation itself
        self.events.append(("wait", self.job))
        return self


def _async_fn(clock, events, *, first=64 * TICK, dispatch=TICK, limit=500):
    """A function whose call is dispatched in ``dispatch`` s and computed in 3 ticks on
    waiting; its first call (a compilation) takes ``first`` s more. It stops a timer that
    would call it without end."""

    def fn():
        job = sum(1 for kind, _ in events if kind == "call")
        if job >= limit:
            raise AssertionError(f"called {job} times: the timer does not stop")
        clock.now += dispatch + (first if job == 0 else 0.0)
        events.append(("call", job))
        return AsyncResult(job, clock, events)

    return fn


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr("helpers.timing.time", fake)
    return fake


@pytest.mark.parametrize(("warmup", "repeat", "calls"), [(0, 1, 1), (1, 3, 4), (2, 2, 1)])
def test_timeit_waits_for_every_call_before_the_next_and_reports_seconds_per_call(
    clock, warmup, repeat, calls
):
    events = []
    timing = timeit(_async_fn(clock, events), warmup=warmup, repeat=repeat, calls=calls)
    jobs = warmup + repeat * calls
    # Each call, warm-ups included, is waited for before the next one starts.
    assert events == [event for job in range(jobs) for event in (("call", job), ("wait", job))]
    # A call costs its dispatch and its computation: 4 ticks, however many calls a run has.
    first_timed = 4 * TICK + (64 * TICK if warmup == 0 else 0.0)  # no warm-up: compilation
    expected = (first_timed / calls + 4 * TICK * (calls - 1) / calls,) + (4 * TICK,) * (repeat - 1)
    assert timing.per_call == expected
    assert timing.calls_per_run == calls


def test_timeit_leaves_compilation_out_of_the_timed_runs(clock):
    events = []
    timing = timeit(_async_fn(clock, events, first=1000.0), repeat=3, calls=2)
    assert timing.per_call == (4 * TICK,) * 3 and timing.median == 4 * TICK
    assert str(timing) == "62.5 ms ± 0 ns per call (median ± half IQR of 3 runs, 2 calls each)"


def test_timeit_repeats_seven_times_and_warms_up_once_by_default(clock):
    events = []
    timing = timeit(_async_fn(clock, events), calls=1)
    assert len(timing.per_call) == 7
    assert events.count(("wait", 0)) == 1 and len(events) == 2 * (1 + 7)


@pytest.mark.parametrize(
    ("min_run_seconds", "calls"),
    [
        (0.0, 1), (4 * TICK, 1), (5 * TICK, 2), (8 * TICK, 2), (9 * TICK, 5), (20 * TICK, 5),
        (21 * TICK, 10), (40 * TICK, 10), (41 * TICK, 20), (80 * TICK, 20), (81 * TICK, 50),
        (200 * TICK, 50), (201 * TICK, 100),
    ],
)
def test_timeit_calibrates_runs_of_1_2_5_10_20_50_calls(clock, min_run_seconds, calls):
    """A call takes 4 ticks: the first count in 1, 2, 5, 10, ... whose run lasts at least
    ``min_run_seconds`` is chosen (a run of exactly that long is long enough)."""
    events = []
    timing = timeit(_async_fn(clock, events), repeat=2, min_run_seconds=min_run_seconds)
    assert timing.calls_per_run == calls
    assert timing.per_call == (4 * TICK, 4 * TICK)
    tried = [count for count in (1, 2, 5, 10, 20, 50, 100) if count <= calls]
    assert len(events) == 2 * (1 + sum(tried) + 2 * calls)  # every calibration call waited for
    assert all(kind == "wait" for kind, _ in events[1::2])


def test_timeit_never_stops_waiting_on_numpy_or_python_results():
    # Results without block_until_ready pass through jax.block_until_ready unchanged.
    assert timeit(lambda: [np.float32(1), 2, None], repeat=1, calls=3).calls_per_run == 3


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(-0.0, "0 ns"), (1230, "1230 s"), (4.125, "4.12 s"), (999.5, "1000 s")],
)
def test_format_duration_edge_cases(seconds, text):
    assert format_duration(seconds) == text


def test_timing_str_says_run_and_call_in_the_singular_and_plural():
    assert str(Timing((0.002, 0.004), 1)) == (
        "3 ms ± 500 µs per call (median ± half IQR of 2 runs, 1 call each)"
    )
    assert str(Timing((0.002,), 2)).endswith("(median ± half IQR of 1 run, 2 calls each)")


def test_timing_table_exactly():
    timings = {
        "eager": Timing((0.004, 0.006, 0.008), 1),
        "jit, compiled": Timing((0.001,), 3),
        "zero": Timing((0.0,), 1),
    }
    assert timing_table(timings) == "\n".join([
        "                  median  ± half IQR  speed vs eager",
        "eager               6 ms        1 ms  1.0x",
        "jit, compiled       1 ms        0 ns  6.0x",
        "zero                0 ns        0 ns  too fast to resolve",
    ])
    assert timing_table(timings, baseline="jit, compiled").splitlines()[:2] == [
        "                  median  ± half IQR  speed vs jit, compiled",
        "eager               6 ms        1 ms  0.17x",
    ]


def test_timing_table_names_what_is_wrong():
    with pytest.raises(ValueError, match=r"^timings is empty: give at least one name -> Timing$"):
        timing_table({})
    with pytest.raises(TypeError, match=r"^timings\['b'\] is a float, not a Timing$"):
        timing_table({"a": Timing((1.0,), 1), "b": 1.0})
    with pytest.raises(KeyError, match=r"baseline 'c' is not one of \['a'\]"):
        timing_table({"a": Timing((1.0,), 1)}, baseline="c")


@pytest.mark.parametrize(
    ("ratio", "text"),
    [
        (9.95, "10x"), (9.949, "9.9x"), (0.995, "1.0x"), (0.9949, "0.99x"), (1.5, "1.5x"),
        (1.994, "2.0x"), (0.1, "0.10x"), (0.0999, "0.10x"), (0.01, "0.010x"), (-2.0, "-2.0x"),
        (1e6, "1000000x"),
    ],
)
def test_format_ratio_boundaries(ratio, text):
    assert format_ratio(ratio) == text


def test_timeit_names_a_bad_min_run_seconds_exactly():
    with pytest.raises(TypeError, match=r"^min_run_seconds must be a number$"):
        timeit(_must_not_run, min_run_seconds=None)
    with pytest.raises(ValueError, match=r"^min_run_seconds must be non-negative and finite, got"):
        timeit(_must_not_run, min_run_seconds=-1)


def test_timeit_by_default_wants_runs_of_20_ms(clock):
    # A call takes 4 ticks (62.5 ms): one call already lasts the default 20 ms.
    assert timeit(_async_fn(clock, []), repeat=1).calls_per_run == 1
    # A minimum of 1 s would take 20 calls: 1.25 s.
    assert timeit(_async_fn(clock, []), repeat=1, min_run_seconds=1.0).calls_per_run == 20


def test_timing_and_timeit_messages_exactly():
    with pytest.raises(ValueError, match=r"^a Timing needs at least one run$"):
        Timing((), 1)
    with pytest.raises(TypeError, match=r"^fn must be callable, got int$"):
        timeit(42)


# timeit_interleaved and median_ratio (chapter 7), on the fake clock: several functions, each
# recording its calls and waits by name.


class NamedAsyncFunction:
    """A function named ``name`` whose call is dispatched in 1 tick and computed in
    ``compute_ticks`` on waiting; its first call (a compilation) takes 64 ticks more.
    ``slowdown`` multiplies both, standing for a burst of load from another program."""

    def __init__(self, name, clock, events, compute_ticks=3):
        self.name, self.clock, self.events = name, clock, events
        self.compute_ticks, self.slowdown, self.calls, self.args = compute_ticks, 1.0, 0, []

    def __call__(self, *args):
        self.args.append(args)
        self.clock.now += (1 + (64 if self.calls == 0 else 0)) * TICK * self.slowdown
        self.calls += 1
        self.events.append(("call", self.name))
        return PendingResult(self)


class PendingResult:
    """The result of a NamedAsyncFunction: its computation runs when it is waited for."""

    def __init__(self, function):
        self.function = function

    def block_until_ready(self):
        function = self.function
        function.clock.now += function.compute_ticks * TICK * function.slowdown
        function.events.append(("wait", function.name))
        return self


def _calls(events):
    return [name for kind, name in events if kind == "call"]


def test_timeit_interleaved_warms_up_and_waits_for_every_call(clock):
    events = []
    fns = {name: NamedAsyncFunction(name, clock, events) for name in ("a", "b")}
    timeit_interleaved(fns, rounds=3)
    # Every call is waited for before the next one starts, warm-up calls included.
    assert events[0::2] == [("call", name) for name in _calls(events)]
    assert events[1::2] == [("wait", name) for name in _calls(events)]
    # Each function's first call (its compilation) comes before any round starts.
    rounds = _calls(events)[-6:]
    assert rounds == ["a", "b"] * 3 and set(_calls(events)[:-6]) == {"a", "b"}


def test_timeit_interleaved_takes_one_run_of_each_function_per_round(clock):
    events = []
    # "quick" takes 1 tick a call (15.6 ms), "slow" 4: runs of 20 ms need 2 calls and 1 call.
    quick = NamedAsyncFunction("quick", clock, events, compute_ticks=0)
    slow = NamedAsyncFunction("slow", clock, events, compute_ticks=3)
    timings = timeit_interleaved({"quick": quick, "slow": slow}, rounds=4)
    assert timings["quick"].calls_per_run == 2 and timings["slow"].calls_per_run == 1
    assert _calls(events)[-4 * 3:] == ["quick", "quick", "slow"] * 4  # in turns, not in blocks
    assert timings["quick"].per_call == (TICK,) * 4
    assert timings["slow"].per_call == (4 * TICK,) * 4


def test_timeit_interleaved_passes_the_same_arguments_to_every_call(clock):
    events = []
    fns = {name: NamedAsyncFunction(name, clock, events) for name in ("a", "b")}
    timeit_interleaved(fns, "x", 2, rounds=2)
    assert all(fn.args == [("x", 2)] * fn.calls for fn in fns.values())


def test_timeit_interleaved_lists_the_rounds_in_order(clock):
    events = []
    fns = {name: NamedAsyncFunction(name, clock, events) for name in ("a", "b")}

    class BurstInRoundTwo(dict):
        """Slows every function down 10 times while the second round runs (the functions
        of a round are looked up once per round, after once for the warm-up)."""

        def items(self):
            self.rounds = getattr(self, "rounds", -1) + 1  # the calibration is "round -1"
            for fn in fns.values():
                fn.slowdown = 10.0 if self.rounds == 2 else 1.0
            return super().items()

    timings = timeit_interleaved(BurstInRoundTwo(fns), rounds=3)
    assert timings["a"].per_call == (4 * TICK, 40 * TICK, 4 * TICK)
    assert median_ratio(timings["a"], timings["b"]) == 1.0  # the burst hit both sides alike


def test_median_ratio_is_the_median_of_the_ratios_per_round():
    slower = Timing((2.0, 4.0, 30.0), 1)
    faster = Timing((1.0, 1.0, 10.0), 1)
    # Ratios per round 2, 4 and 3: their median is 3, where the ratio of the medians is 4.
    assert median_ratio(slower, faster) == 3.0
    assert slower.median / faster.median == 4.0
    assert median_ratio(Timing((6.0, 8.0), 1), Timing((2.0, 2.0), 1)) == 3.5  # even count


def test_median_ratio_needs_timings_of_the_same_rounds():
    with pytest.raises(ValueError, match="zip"):
        median_ratio(Timing((1.0, 2.0), 1), Timing((1.0,), 1))


def test_timing_fastest_is_the_fastest_run():
    assert Timing((0.003, 0.001, 0.002), 5).fastest == 0.001
    assert Timing((0.5,), 1).fastest == 0.5


def test_timing_table_with_the_fastest_runs_exactly():
    timings = {"eager": Timing((0.004, 0.006, 0.008), 1), "jit": Timing((0.002, 0.001), 3)}
    assert timing_table(timings, fastest=True) == "\n".join([
        "          median  ± half IQR    fastest  speed vs eager",
        "eager       6 ms        1 ms       4 ms  1.0x",
        "jit       1.5 ms      250 µs       1 ms  4.0x",
    ])


# faults_per_call, on a fake resource counter: the faults of the work itself, which happens
# when the result is waited for, counted per call, with the warm-up's left out.


class FaultCounter:
    """Stands in for the module ``resource`` of helpers.timing."""

    RUSAGE_SELF = 0

    def __init__(self):
        self.faults = 0

    def getrusage(self, who):
        assert who == self.RUSAGE_SELF
        return types.SimpleNamespace(ru_minflt=self.faults)


@pytest.mark.parametrize("calls", [1, 3, 10])
def test_faults_per_call_counts_the_waited_work_per_call_without_the_warmup(
    monkeypatch, calls
):
    counter, events = FaultCounter(), []
    monkeypatch.setattr("helpers.timing.resource", counter)

    class Faulting:
        def block_until_ready(self):
            counter.faults += 7  # the work, done while the caller waits
            events.append("wait")
            return self

    def fn(first_call_faults=1000):
        counter.faults += first_call_faults if not events else 1  # dispatch
        events.append("call")
        return Faulting()

    assert faults_per_call(fn, calls=calls) == 8.0
    assert events == ["call", "wait"] * (calls + 1)  # the warm-up, then each call waited for


def test_faults_per_call_counts_the_pages_a_call_touches():
    pages = 256

    def touch_fresh_pages():
        with mmap.mmap(-1, pages * mmap.PAGESIZE) as fresh:  # new memory at every call
            for page in range(pages):
                fresh[page * mmap.PAGESIZE] = 1

    assert pages <= faults_per_call(touch_fresh_pages, calls=3) < 2 * pages
    assert faults_per_call(lambda: None) < pages / 4


def test_timeit_interleaved_calibrates_with_one_run_and_times_seven_rounds_by_default(clock):
    events = []
    # 4 ticks a call (62.5 ms): one call fills a run, so calibrating takes the warm-up, one
    # call to size the runs and one run of one call: three calls before the rounds.
    fns = {name: NamedAsyncFunction(name, clock, events, compute_ticks=3) for name in "ab"}
    timings = timeit_interleaved(fns)
    calls = _calls(events)
    assert calls[:6] == ["a"] * 3 + ["b"] * 3
    assert calls[6:] == ["a", "b"] * 7
    assert all(len(timing.per_call) == 7 for timing in timings.values())


def test_faults_per_call_averages_ten_calls_by_default(monkeypatch):
    monkeypatch.setattr("helpers.timing.resource", FaultCounter())
    called = []
    assert faults_per_call(lambda: called.append(1)) == 0.0
    assert len(called) == 11  # the warm-up and ten counted calls
