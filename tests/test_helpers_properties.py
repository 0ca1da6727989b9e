"""Property-based tests (Hypothesis) of the helpers' argument checking and numerical functions.

The example-based tests in the other ``test_*.py`` files pin a few chosen values; these state
what must hold for *every* input of a kind and let Hypothesis search for a counterexample.

Settings: every test here uses the ``helpers-properties`` profile registered below (as the
parent of its own ``@settings``, so the profile is not loaded globally and other tests are
unaffected):

- ``derandomize=True``: each test draws its examples from a seed derived from the test
  itself, so a run in CI tests exactly the same inputs as a run on a laptop, and a red CI
  reproduces with the plain pytest command. The price is that no new inputs are explored
  from run to run; to explore, run a test with ``@seed(N)`` (or ``derandomize=False``)
  locally. Known counterexamples are pinned with ``@example`` so they are always tried.
- ``database=None``: no example database is written (with derandomized runs one would add
  nothing anyway), and Hypothesis's other caches go to a temporary folder (see below), so
  the tests write nothing in the checkout.
- ``deadline=None``: the properties are about results, not speed; the first call that
  touches JAX devices initialises the backend, and a loaded CI runner must not fail a test
  for being slow.

The ``@example`` cases pinned in the tests are counterexamples that these properties once
found in ``helpers``; they stay as regression tests.
"""

from __future__ import annotations

import ast
import atexit
import io
import math
import os
import re
import shutil
import string
import tempfile
from collections import namedtuple
from contextlib import redirect_stdout
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import hypothesis.extra.numpy as hnp
import jax
import numpy as np
import pytest
import yaml
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from helpers import (
    Timing,
    XORDataset,
    count_traces,
    devices_for,
    environment_banner,
    expect_error,
    format_duration,
    numpy_collate,
    plot_decision_boundary,
    plot_xor,
    simulate_cpu_devices,
    timeit,
    timing_table,
)
from tools.notebooks import TAUGHT_LIBRARIES, repository_url, setup_cell_source

settings.register_profile(
    "helpers-properties", derandomize=True, database=None, deadline=None, print_blob=False
)
PROFILE = settings.get_profile("helpers-properties")

# Even without a database, Hypothesis writes caches (constants it finds in the source, while
# pytest collects, and a Unicode table) under ./.hypothesis. Keep them in a temporary folder,
# removed at exit, unless HYPOTHESIS_STORAGE_DIRECTORY says where they go.
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    _STORAGE = tempfile.mkdtemp(prefix="hypothesis-")
    set_hypothesis_home_dir(_STORAGE)
    atexit.register(shutil.rmtree, _STORAGE, ignore_errors=True)


def config(max_examples: int) -> settings:
    """The profile above with a per-test number of examples (the whole file runs in seconds)."""
    return settings(PROFILE, max_examples=max_examples)


# Negative floats, -0.0 excluded: the helpers treat -0.0 as 0 (format_duration(-0.0) is '-0 ns').
MIN_SUBNORMAL = 5e-324

# Values of the wrong type for an int, a number or a string argument. `bool` is a subclass of
# int that every helper rejects on purpose, so it is in all of them.
NOT_AN_INT = st.one_of(
    st.booleans(),
    st.floats(),  # integral floats like 3.0 too, and NaN and infinities
    st.text(max_size=5),
    st.none(),
    st.fractions(),
    st.lists(st.integers(), max_size=2),
)
NOT_A_NUMBER = st.one_of(
    st.booleans(), st.text(max_size=5), st.none(), st.binary(max_size=3),
    st.lists(st.floats(), max_size=2),
)


# --------------------------------------------------------------------------------------------
# helpers.timing.format_duration
# --------------------------------------------------------------------------------------------

SCALES = {"s": Decimal(1), "ms": Decimal("1e-3"), "µs": Decimal("1e-6"), "ns": Decimal("1e-9")}
FLOAT_SCALES = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}
LARGER_UNIT = {"ns": "µs", "µs": "ms", "ms": "s", "s": None}

# Every finite non-negative float (subnormals and 1.8e308 included), integers, and values
# just around each unit boundary (x 1000), where rounding to 3 digits can carry into 1000.
DURATIONS = st.one_of(
    st.floats(min_value=0.0, allow_nan=False, allow_infinity=False),
    st.integers(min_value=0, max_value=2**53),
    st.builds(
        lambda mantissa, exponent: mantissa * 10.0**exponent,
        st.floats(min_value=0.998, max_value=1.002),
        st.integers(min_value=-12, max_value=3),
    ),
)


def parse_duration(text: str) -> tuple[Decimal, str]:
    """``'12.3 ms'`` -> ``(Decimal('12.3'), 'ms')``; fails the test for anything else."""
    match = re.fullmatch(r"(\S+) (ns|µs|ms|s)", text)
    assert match, f"{text!r} is not '<number> <unit>'"
    number = Decimal(match[1])
    assert number.is_finite() and number >= 0, text
    return number, match[2]


@given(DURATIONS)
@config(300)
@example(0.0)
@example(5e-324)  # the smallest subnormal: 3 significant digits are kept even there
@example(0.0009996)  # rounds up to 1 ms: once printed as 1000 of the smaller unit
@example(1.0)
@example(1e-3)
@example(1e-6)
@example(1e-9)
@example(999.5e-9)
def test_format_duration_keeps_three_significant_digits_in_the_right_unit(seconds):
    number, unit = parse_duration(format_duration(seconds))
    assert len(number.normalize().as_tuple().digits) <= 3
    # The unit: never less than 1 of it (but for ns, the smallest) and less than 1000 of it
    # (but for s, the largest).
    assert number >= 1 or unit == "ns"
    assert number < 1000 or unit == "s"
    larger = LARGER_UNIT[unit]
    assert number < 1000 or larger is None or seconds < FLOAT_SCALES[larger]
    # Within rounding: at most half a unit in the third significant digit of the exact value
    # in that unit (plus a hair for the float division), hence a relative error < 0.5%.
    # No exception is needed for tiny values: below 1 ns the digits are still significant
    # ones ('0.001 ns', '4.94e-315 ns'), and 0 prints as exactly '0 ns'.
    exact = Decimal(seconds) / SCALES[unit]
    error = abs(number - exact)
    if exact == 0:
        assert number == 0
    else:
        half_unit = Decimal(5) * Decimal(10) ** (exact.adjusted() - 3)
        assert error <= half_unit * (1 + Decimal("1e-12")), (seconds, number, unit)
        assert error / exact < Decimal("0.005")


@given(DURATIONS, DURATIONS)
@config(300)
@example(0.0009999, 0.001)  # '1e+03 µs' and '1 ms': equal, not decreasing
def test_format_duration_is_monotonic(a, b):
    a, b = sorted((a, b))
    value_a, unit_a = parse_duration(format_duration(a))
    value_b, unit_b = parse_duration(format_duration(b))
    assert value_a * SCALES[unit_a] <= value_b * SCALES[unit_b], (a, b)


@given(
    st.one_of(
        st.just(0.0),
        st.floats(min_value=1e-9, max_value=999.0),
        st.builds(
            lambda mantissa, exponent: mantissa * 10.0**exponent,
            st.floats(min_value=0.999, max_value=1.0, exclude_max=True),
            st.sampled_from([-6, -3, 0]),
        ),
    )
)
@config(100)
@example(0.0009996)
def test_format_duration_is_readable_from_1_ns_to_999_s(seconds):
    """Readable: a plain decimal below 1000 of its unit, never exponent notation."""
    text = format_duration(seconds)
    assert re.fullmatch(r"\d{1,3}(\.\d{1,2})? (ns|µs|ms|s)", text), (seconds, text)


@given(st.one_of(st.floats(max_value=-MIN_SUBNORMAL), st.integers(max_value=-1)))
@config(100)
@example(-math.inf)
@example(-5e-324)
def test_format_duration_rejects_negative_durations(seconds):
    with pytest.raises(ValueError, match="seconds must be a non-negative finite number"):
        format_duration(seconds)


def test_format_duration_rejects_nan():
    with pytest.raises(ValueError, match="non-negative"):
        format_duration(math.nan)


@given(NOT_A_NUMBER)
@config(100)
def test_format_duration_rejects_non_numbers(value):
    with pytest.raises(TypeError, match=f"seconds must be a number, got {type(value).__name__}"):
        format_duration(value)


# --------------------------------------------------------------------------------------------
# helpers.timing.Timing and timing_table
# --------------------------------------------------------------------------------------------

RUN_TIMES = st.floats(min_value=0.0, max_value=1e3, allow_nan=False)
TIMINGS = st.builds(
    Timing,
    st.lists(RUN_TIMES, min_size=1, max_size=15).map(tuple),
    st.integers(min_value=1, max_value=10**6),
)


@given(TIMINGS)
@config(300)
def test_timing_median_and_spread_are_bounded_by_the_runs(timing):
    runs = timing.per_call
    low, high = min(runs), max(runs)
    assert low <= timing.median <= high
    assert 0.0 <= timing.spread <= (high - low) / 2 + 1e-12 * high
    if len(runs) == 1:
        assert timing.spread == 0.0
    # str() never raises, and says what the properties say, in format_duration's format.
    match = re.fullmatch(
        r"(.+) ± (.+) per call \(median ± half IQR of (\d+) runs?, (\d+) calls? each\)",
        str(timing),
    )
    assert match, str(timing)
    assert match[1] == format_duration(timing.median)
    assert match[2] == format_duration(timing.spread)
    assert (int(match[3]), int(match[4])) == (len(runs), timing.calls_per_run)


@given(RUN_TIMES, st.integers(min_value=1, max_value=20), st.integers(min_value=1, max_value=100))
@config(200)
def test_timing_of_identical_runs_has_no_spread(seconds, runs, calls):
    timing = Timing((seconds,) * runs, calls)
    assert timing.median == seconds
    assert timing.spread == 0.0


@st.composite
def nearly_equal_pairs(draw: st.DrawFn) -> tuple[float, float]:
    """Two run times a few ulps apart: what two runs of a very regular function give."""
    a = draw(st.floats(min_value=1e-7, max_value=10.0))
    b = a
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        b = math.nextafter(b, math.inf)
    return (a, b) if draw(st.booleans()) else (b, a)


@given(nearly_equal_pairs())
@settings(PROFILE, max_examples=100, report_multiple_bugs=False)
@example((0.9369691586445807, 0.9369691586445809))
def test_timing_spread_of_two_nearly_equal_runs_is_not_negative(runs):
    timing = Timing(runs, 1)
    str(timing)  # raises ValueError for a negative spread
    assert timing.spread >= 0.0


@st.composite
def timing_tables(draw: st.DrawFn) -> tuple[dict[str, Timing], str | None]:
    names = draw(
        st.lists(
            st.text(string.ascii_letters + string.digits + "_", min_size=1, max_size=12),
            min_size=1, max_size=6, unique=True,
        )
    )
    medians = st.one_of(st.floats(min_value=1e-9, max_value=999.0), st.just(0.0))
    timings = {name: Timing((draw(medians),), 1) for name in names}
    baseline = draw(st.none() | st.sampled_from(names))
    return timings, baseline


@given(timing_tables())
@config(200)
def test_timing_table_speed_is_baseline_median_over_row_median(table_input):
    timings, baseline = table_input
    lines = timing_table(timings, baseline=baseline).splitlines()
    baseline = next(iter(timings)) if baseline is None else baseline
    reference = timings[baseline].median
    header, rows = lines[0], lines[1:]
    assert header.endswith(f"speed vs {baseline}")
    speed_column = header.index("speed vs")
    assert len(rows) == len(timings)
    for row, (name, timing) in zip(rows, timings.items(), strict=True):
        fields = row.split()
        assert fields[0] == name
        median, unit = parse_duration(f"{fields[1]} {fields[2]}")
        assert abs(median * SCALES[unit] - Decimal(timing.median)) <= Decimal(
            timing.median
        ) * Decimal("0.005")
        speed = row[speed_column:]  # the speed column is aligned under its header
        if timing.median == 0:
            assert speed == "too fast to resolve"
            continue
        expected = reference / timing.median
        # Two significant digits: 12x, 4.0x, 0.41x, 0.0041x.
        assert re.fullmatch(r"[1-9]\d+x|\d\.\dx|0\.0*[1-9]\dx", speed) or (
            expected == 0 and speed == "0.0x"
        ), row
        assert abs(float(speed[:-1]) - expected) <= 0.051 * expected + 1e-12
        if name == baseline:
            assert speed == "1.0x"


@given(timing_tables(), st.text(max_size=8))
@config(50)
def test_timing_table_rejects_an_unknown_baseline(table_input, baseline):
    timings, _ = table_input
    assume(baseline not in timings)
    with pytest.raises(KeyError, match="is not one of"):
        timing_table(timings, baseline=baseline)


# --------------------------------------------------------------------------------------------
# helpers.timing.timeit: argument checking, and exactly how often fn runs
# --------------------------------------------------------------------------------------------


def must_not_run(*args, **kwargs):
    """A function to time that fails the test if timeit ever calls it (and so never hangs)."""
    raise AssertionError("timeit called fn although an argument was invalid")


MINIMUM = {"repeat": 1, "calls": 1, "warmup": 0}


@given(
    st.sampled_from(sorted(MINIMUM)).flatmap(
        lambda name: st.tuples(
            st.just(name),
            st.one_of(
                NOT_AN_INT.filter(lambda v: not (name == "calls" and v is None)),
                st.integers(max_value=MINIMUM[name] - 1),
            ),
        )
    )
)
@config(200)
def test_timeit_rejects_bad_counts_before_calling_fn(bad):
    name, value = bad
    if isinstance(value, int) and not isinstance(value, bool):
        error, message = ValueError, f"{name} must be at least {MINIMUM[name]}, got {value}"
    else:
        error, message = TypeError, f"{name} must be an int, got {type(value).__name__}"
    with pytest.raises(error, match=re.escape(message)):
        timeit(must_not_run, **{name: value})


@given(
    st.one_of(
        NOT_A_NUMBER.map(lambda v: (TypeError, v)),
        st.floats(max_value=-MIN_SUBNORMAL).map(lambda v: (ValueError, v)),
    )
)
@config(100)
def test_timeit_rejects_a_bad_min_run_seconds_before_calling_fn(bad):
    error, value = bad
    with pytest.raises(error, match="min_run_seconds must be"):
        timeit(must_not_run, min_run_seconds=value)


@given(st.sampled_from([math.nan, math.inf]))
@config(10)
def test_timeit_rejects_a_non_finite_min_run_seconds(value):
    with pytest.raises(ValueError, match="min_run_seconds"):
        timeit(must_not_run, min_run_seconds=value)  # must_not_run keeps this from hanging


@given(
    st.one_of(st.integers(), st.floats(), st.text(max_size=3), st.none(), st.tuples()),
)
@config(50)
def test_timeit_and_count_traces_reject_non_callables(value):
    with pytest.raises(TypeError, match="fn must be callable"):
        timeit(value)
    with pytest.raises(TypeError, match="count_traces needs a function"):
        count_traces(value)


IDENTIFIERS = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda name: name not in {"fn", "repeat", "calls", "warmup", "min_run_seconds"}
)


@given(
    repeat=st.integers(min_value=1, max_value=5),
    calls=st.integers(min_value=1, max_value=5),
    warmup=st.integers(min_value=0, max_value=3),
    args=st.lists(st.integers(), max_size=3),
    kwargs=st.dictionaries(IDENTIFIERS, st.integers(), max_size=3),
)
@config(50)
def test_timeit_calls_fn_warmup_plus_repeat_times_calls(repeat, calls, warmup, args, kwargs):
    seen = []

    def fn(*a, **k):
        seen.append((a, k))
        return np.float32(1.0)

    timing = timeit(fn, *args, repeat=repeat, calls=calls, warmup=warmup, **kwargs)
    assert len(seen) == warmup + repeat * calls
    assert all(call == (tuple(args), kwargs) for call in seen)
    assert len(timing.per_call) == repeat and timing.calls_per_run == calls
    assert all(t >= 0 for t in timing.per_call)


# --------------------------------------------------------------------------------------------
# helpers.errors.expect_error
# --------------------------------------------------------------------------------------------

# Built-in exceptions whose str() is the one argument (KeyError's is its repr) and some
# BaseExceptions that are not Exceptions, which a generator-based context manager must still
# pass through untouched.
EXCEPTIONS = [
    ValueError, TypeError, KeyError, IndexError, LookupError, RuntimeError, RecursionError,
    NotImplementedError, ZeroDivisionError, ArithmeticError, OverflowError, AttributeError,
    OSError, FileNotFoundError, PermissionError, AssertionError, UnicodeError, StopIteration,
    SystemExit, GeneratorExit, Exception,
]
MESSAGES = st.one_of(
    st.text(),
    st.lists(st.text(alphabet=st.characters(exclude_characters="\n\r")), max_size=6).map(
        "\n".join
    ),
)


def unindent(line: str) -> str:
    """A printed message line without the 4-space indent (blank lines are not indented)."""
    if not line.strip():
        return line
    assert line.startswith("    "), f"message line not indented: {line!r}"
    return line[4:]


@given(
    exc_type=st.sampled_from(EXCEPTIONS),
    message=MESSAGES,
    max_lines=st.none() | st.integers(min_value=1, max_value=4),
    others=st.lists(st.sampled_from(EXCEPTIONS), max_size=2),
)
@config(200)
@example(exc_type=KeyError, message="a\nb", max_lines=None, others=[])
def test_expect_error_catches_and_prints_the_expected_exception(
    exc_type, message, max_lines, others
):
    error = exc_type(message)
    expected = exc_type if not others else (*others, exc_type)
    out = io.StringIO()
    with redirect_stdout(out), expect_error(expected, max_lines=max_lines) as caught:
        raise error
    assert caught.value is error
    printed = out.getvalue()
    assert printed.endswith("\n")
    header, *body = printed[:-1].split("\n")
    assert header == f"{exc_type.__name__} (expected):"
    lines = str(error).splitlines() or [""]
    if max_lines is not None and len(lines) > max_lines:
        lines = [*lines[:max_lines], "[...]"]
    assert [unindent(line) for line in body] == lines


@given(
    raised=st.sampled_from(EXCEPTIONS),
    expected=st.lists(st.sampled_from(EXCEPTIONS), min_size=1, max_size=3).map(tuple),
    message=MESSAGES,
)
@config(200)
def test_expect_error_lets_any_other_exception_through_unchanged(raised, expected, message):
    assume(not issubclass(raised, expected))
    error = raised(message)
    out = io.StringIO()
    with pytest.raises(raised) as info, redirect_stdout(out), expect_error(expected):
        raise error
    assert info.value is error
    assert out.getvalue() == ""


@given(expected=st.lists(st.sampled_from(EXCEPTIONS), min_size=1, max_size=3))
@config(50)
def test_expect_error_fails_when_nothing_is_raised(expected):
    names = " or ".join(t.__name__ for t in expected)
    with pytest.raises(AssertionError, match=re.escape(f"expected {names} to be raised")):
        with expect_error(tuple(expected)):
            pass


@given(message=st.text(), data=st.data())
@config(100)
def test_expect_error_match_searches_the_message(message, data):
    error = RuntimeError(message)
    start = data.draw(st.integers(min_value=0, max_value=len(message)))
    end = data.draw(st.integers(min_value=start, max_value=len(message)))
    pattern = re.escape(message[start:end])  # any part of the message, "" included
    with redirect_stdout(io.StringIO()), expect_error(RuntimeError, match=pattern) as caught:
        raise error
    assert caught.value is error
    # A pattern longer than the message cannot be found in it.
    out = io.StringIO()
    with pytest.raises(AssertionError, match="does not match") as info, redirect_stdout(out):
        with expect_error(RuntimeError, match=re.escape(message + "!")):
            raise error
    assert info.value.__cause__ is error
    assert out.getvalue() == ""


@given(
    st.one_of(
        st.tuples(
            st.just("expected"),
            st.one_of(
                st.integers(), st.text(max_size=5), st.none(),
                st.sampled_from([int, str, object, (), ValueError("an instance")]),
                st.lists(st.sampled_from([ValueError, int, "TypeError"]), min_size=1)
                .filter(lambda items: any(t is not ValueError for t in items))
                .map(tuple),
            ),
        ),
        st.tuples(
            st.just("match"), st.one_of(st.integers(), st.binary(max_size=3), st.floats())
        ),
        st.tuples(
            st.just("max_lines"),
            st.one_of(
                st.integers(max_value=0), st.booleans(), st.floats(), st.text(max_size=3)
            ),
        ),
    )
)
@config(200)
def test_expect_error_rejects_bad_arguments_before_running_the_block(bad):
    name, value = bad
    kwargs = {"expected": ValueError, name: value}
    error = ValueError if name == "max_lines" else TypeError
    ran = False
    with pytest.raises(error, match=name):
        with expect_error(kwargs.pop("expected"), **kwargs):
            ran = True
    assert not ran


# --------------------------------------------------------------------------------------------
# helpers.data.XORDataset
# --------------------------------------------------------------------------------------------

SIZES = st.integers(min_value=1, max_value=2000)
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
NOISES = st.floats(min_value=0.0, max_value=0.3)


@given(size=SIZES, seed=SEEDS, noise=NOISES)
@config(100)
def test_xor_dataset_shapes_dtypes_labels_and_reproducibility(size, seed, noise):
    ds = XORDataset(size, seed, noise)
    assert len(ds) == size
    assert ds.data.shape == (size, 2) and ds.data.dtype == np.float32
    assert ds.labels.shape == (size,) and ds.labels.dtype == np.int32
    assert set(np.unique(ds.labels)) <= {0, 1}
    assert np.isfinite(ds.data).all()
    again = XORDataset(size, seed, noise)
    np.testing.assert_array_equal(again.data, ds.data)
    np.testing.assert_array_equal(again.labels, ds.labels)
    point, label = ds[size - 1]
    assert point.shape == (2,) and label == ds.labels[-1]


@given(size=SIZES, seed=SEEDS, noise=st.floats(min_value=1e-3, max_value=0.3), other=SEEDS)
@config(50)
def test_xor_dataset_depends_on_the_seed(size, seed, noise, other):
    assume(other != seed)
    # With noise, two seeds giving bit-identical float32 points is not a realistic event.
    a, b = XORDataset(size, seed, noise), XORDataset(size, other, noise)
    assert not np.array_equal(a.data, b.data)


@given(size=SIZES, seed=SEEDS, noise=st.floats(min_value=0.0, max_value=0.05))
@config(100)
@example(size=2000, seed=0, noise=0.0)
def test_xor_dataset_labels_are_the_xor_of_the_nearest_corner(size, seed, noise):
    """With noise <= 0.05, rounding recovers the corner (a 10-sigma miss: p < 1e-22 a point)."""
    ds = XORDataset(size, seed, noise)
    corners = np.round(ds.data)
    assert set(np.unique(corners)) <= {0.0, 1.0}
    np.testing.assert_array_equal(ds.labels, np.logical_xor(corners[:, 0], corners[:, 1]))
    if noise == 0:
        np.testing.assert_array_equal(ds.data, corners)  # exactly the corners


@given(size=SIZES, seed=SEEDS, noise=NOISES)
@config(50)
def test_xor_dataset_noise_moves_points_around_the_same_corners(size, seed, noise):
    """For one seed, every noise level has the same corners and labels, and the offsets from
    the corners scale with ``noise``: a Gaussian of that standard deviation around them."""
    corners = XORDataset(size, seed, 0.0)
    reference = XORDataset(size, seed, 0.3)
    ds = XORDataset(size, seed, noise)
    np.testing.assert_array_equal(ds.labels, corners.labels)
    base, far = corners.data.astype(np.float64), reference.data.astype(np.float64)
    expected = base + (noise / 0.3) * (far - base)
    np.testing.assert_allclose(ds.data, expected, rtol=0, atol=1e-6)


@given(
    size=SIZES,
    seed=SEEDS,
    noise=NOISES,
    int_type=st.sampled_from([int, np.int8, np.int64, np.uint32, np.uint64]),
    real_type=st.sampled_from([float, np.float64, Fraction]),
)
@config(50)
def test_xor_dataset_accepts_numpy_integers_and_real_noise(size, seed, noise, int_type, real_type):
    if int_type is np.int8:
        size, seed = size % 128 or 1, seed % 128
    ds = XORDataset(int_type(size), int_type(seed), real_type(noise))
    reference = XORDataset(int(size), int(seed), float(real_type(noise)))
    assert type(ds.size) is int and type(ds.seed) is int and type(ds.noise) is float
    np.testing.assert_array_equal(ds.data, reference.data)


NOT_A_REAL = st.one_of(
    st.booleans(), st.text(max_size=4), st.none(), st.complex_numbers(), st.just([0.1])
)


@given(
    st.one_of(
        st.tuples(st.just("size"), st.integers(max_value=0), st.just("size must be at least 1")),
        st.tuples(st.just("size"), NOT_AN_INT, st.just("size must be an integer")),
        st.tuples(st.just("seed"), st.integers(max_value=-1), st.just("seed must be at least 0")),
        st.tuples(st.just("seed"), NOT_AN_INT, st.just("seed must be an integer")),
        st.tuples(
            st.just("noise"),
            st.floats(max_value=-MIN_SUBNORMAL) | st.just(math.nan),
            st.just("noise must be non-negative"),
        ),
        st.tuples(st.just("noise"), NOT_A_REAL, st.just("noise must be a real number")),
    )
)
@config(300)
def test_xor_dataset_rejects_bad_arguments_with_a_clear_message(bad):
    name, value, message = bad
    kwargs = {"size": 10, "seed": 0, "noise": 0.1, name: value}
    error = ValueError if "must be at least" in message or "non-negative" in message else TypeError
    with pytest.raises(error, match=re.escape(message)) as info:
        XORDataset(**kwargs)
    if error is TypeError:
        assert repr(value) in str(info.value)  # the message shows the offending value


# --------------------------------------------------------------------------------------------
# helpers.data.numpy_collate
# --------------------------------------------------------------------------------------------

LEAF_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_]


def leaf_templates() -> st.SearchStrategy:
    arrays = st.tuples(
        st.just("array"),
        hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
        st.sampled_from(LEAF_DTYPES),
    )
    return arrays | st.sampled_from([("int",), ("float",)])


TEMPLATES = st.recursive(
    leaf_templates(),
    lambda children: st.one_of(
        st.lists(children, max_size=3).map(lambda items: ("tuple", items)),
        st.lists(children, max_size=3).map(lambda items: ("list", items)),
        st.dictionaries(st.text("abcxyz", min_size=1, max_size=3), children, max_size=3).map(
            lambda items: ("dict", items)
        ),
    ),
    max_leaves=6,
)


def samples(template) -> st.SearchStrategy:
    """Samples of the structure ``template``: same containers, same leaf shapes and dtypes."""
    kind = template[0]
    if kind == "array":
        _, shape, dtype = template
        dtype = np.dtype(dtype)
        options = {"allow_nan": False} if dtype.kind == "f" else {}
        return hnp.arrays(dtype, shape, elements=hnp.from_dtype(dtype, **options))
    if kind == "int":
        return st.integers(min_value=-(2**62), max_value=2**62)
    if kind == "float":
        return st.floats(allow_nan=False)
    if kind == "dict":
        return st.fixed_dictionaries({key: samples(child) for key, child in template[1].items()})
    fields = st.tuples(*(samples(child) for child in template[1]))
    return fields if kind == "tuple" else fields.map(list)


def unstack(tree, i):
    if isinstance(tree, dict):
        return {key: unstack(value, i) for key, value in tree.items()}
    if isinstance(tree, tuple | list):
        return type(tree)(unstack(value, i) for value in tree)
    return tree[i]


def assert_same_tree(actual, expected):
    assert type(actual) is type(expected) or not isinstance(expected, tuple | list | dict)
    if isinstance(expected, dict):
        assert set(actual) == set(expected)  # samples may list the same keys in any order
        for key in expected:
            assert_same_tree(actual[key], expected[key])
    elif isinstance(expected, tuple | list):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_same_tree(a, e)
    else:
        expected = np.asarray(expected)
        assert actual.shape == expected.shape
        assert np.array_equal(actual, expected)


def assert_batch_axis(result, template, first, batch_size):
    """Containers as in the template (a dict's keys in the first sample's order), and every
    leaf an ndarray of shape ``(batch_size, *leaf_shape)`` with the leaf's dtype."""
    kind = template[0]
    if kind in ("tuple", "list", "dict"):
        children = template[1]
        assert type(result) is {"tuple": tuple, "list": list, "dict": dict}[kind]
        if kind == "dict":
            assert list(result) == list(first)
            triples = [(result[key], children[key], first[key]) for key in first]
        else:
            triples = list(zip(result, children, first, strict=True))
        for sub_result, sub_template, sub_first in triples:
            assert_batch_axis(sub_result, sub_template, sub_first, batch_size)
        return
    assert isinstance(result, np.ndarray)
    if kind == "array":
        _, shape, dtype = template
        assert result.shape == (batch_size, *shape) and result.dtype == dtype
    else:
        python_type = int if kind == "int" else float
        assert result.shape == (batch_size,)
        assert result.dtype == np.asarray(python_type(0)).dtype


@given(template=TEMPLATES, batch_size=st.integers(min_value=1, max_value=6), data=st.data())
@config(150)
def test_numpy_collate_stacks_along_a_new_batch_axis_and_unstacks_back(
    template, batch_size, data
):
    batch = [data.draw(samples(template)) for _ in range(batch_size)]
    result = numpy_collate(batch)
    assert_batch_axis(result, template, batch[0], batch_size)
    for i, sample in enumerate(batch):
        assert_same_tree(unstack(result, i), sample)


@given(
    shapes=st.lists(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3), min_size=2, max_size=5),
    wrappers=st.lists(st.sampled_from(["tuple", "list", "dict"]), max_size=3),
)
@config(100)
def test_numpy_collate_rejects_leaves_of_different_shapes(shapes, wrappers):
    assume(len(set(shapes)) > 1)

    def wrap(leaf):
        for kind in wrappers:
            leaf = {"x": leaf} if kind == "dict" else (leaf, 0) if kind == "tuple" else [0, leaf]
        return leaf

    with pytest.raises(ValueError, match="different shapes"):
        numpy_collate([wrap(np.zeros(shape)) for shape in shapes])


@given(
    st.one_of(
        st.lists(st.integers(0, 3), min_size=2, max_size=4)
        .filter(lambda lengths: len(set(lengths)) > 1)
        .map(lambda lengths: ([(0,) * n for n in lengths], "same number of fields")),
        st.lists(st.frozensets(st.sampled_from("abc")), min_size=2, max_size=4)
        .filter(lambda keys: len(set(keys)) > 1)
        .map(lambda keys: ([dict.fromkeys(k, 0) for k in keys], "same keys")),
    )
)
@config(100)
def test_numpy_collate_rejects_samples_of_different_structure(case):
    batch, message = case
    with pytest.raises(ValueError, match=message):
        numpy_collate(batch)


Pair = namedtuple("Pair", "x y")
Single = namedtuple("Single", "x")


@given(
    st.sampled_from([Pair, Single]),
    st.integers(min_value=1, max_value=4),
)
@settings(PROFILE, max_examples=10, report_multiple_bugs=False)
def test_numpy_collate_keeps_namedtuples(kind, batch_size):
    batch = [kind(*(np.full(2, i),) * len(kind._fields)) for i in range(batch_size)]
    result = numpy_collate(batch)
    assert type(result) is kind
    for field in result:
        assert isinstance(field, np.ndarray) and field.shape == (batch_size, 2)


# --------------------------------------------------------------------------------------------
# helpers.devices
# --------------------------------------------------------------------------------------------


@given(
    st.one_of(
        NOT_AN_INT.map(lambda v: (TypeError, v)),
        st.integers(max_value=0).map(lambda v: (ValueError, v)),
    )
)
@config(100)
def test_device_counts_are_validated_before_touching_jax(bad):
    error, value = bad
    before = jax.config.jax_num_cpu_devices
    with pytest.raises(error, match="the number of devices must be"):
        devices_for(value)
    # Only invalid counts: a valid one would try to reconfigure the already-running JAX.
    with pytest.raises(error, match="the number of devices must be"):
        simulate_cpu_devices(value)
    assert jax.config.jax_num_cpu_devices == before


@given(st.data())
@config(30)
def test_devices_for_gives_the_first_n_devices_or_explains(data):
    default, cpu = jax.devices(), jax.devices("cpu")
    n = data.draw(st.integers(min_value=1, max_value=len(default)))
    assert devices_for(n) == list(default[:n])
    too_many = data.draw(st.integers(min_value=max(len(default), len(cpu)) + 1, max_value=10**6))
    with pytest.raises(RuntimeError, match=re.escape(f"simulate_cpu_devices({too_many})")):
        devices_for(too_many)


# --------------------------------------------------------------------------------------------
# tools.notebooks: the set-up cell's URL
# --------------------------------------------------------------------------------------------

# RFC 3986 path characters: unreserved, sub-delims, ':' and '@', and percent-encodings.
PATH_CHARS = string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@"
SEGMENTS = st.lists(
    st.sampled_from(PATH_CHARS) | st.from_regex(r"%[0-9A-F]{2}", fullmatch=True),
    min_size=1, max_size=8,
).map("".join)
HOSTS = st.lists(st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True),
                 min_size=1, max_size=3).map(".".join)
URLS = st.builds(
    lambda host, segments: "https://" + host + "".join("/" + s for s in segments),
    HOSTS, st.lists(SEGMENTS, max_size=4),
).filter(lambda url: not url.endswith((".git", "/")))


def install_sources(source: str) -> list[str]:
    """The string constants of the cell that pip could install from (``git+...``)."""
    return [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and node.value.startswith("git+")
    ]


TESTED = {name: "1.2.3" for name in TAUGHT_LIBRARIES}


@given(url=URLS, suffix=st.sampled_from(["", "/", ".git", ".git/", "//"]))
@config(150)
def test_setup_cell_is_valid_python_installing_from_the_url(url, suffix):
    source = setup_cell_source(url + suffix, TESTED)
    compile(source, "setup-cell", "exec")
    assert install_sources(source) == [f"git+{url}.git"]
    assert source == setup_cell_source(url, TESTED)


@given(
    st.one_of(
        st.text().filter(lambda s: not s.startswith("https://")),
        st.builds(lambda prefix, url: prefix + url.removeprefix("https://"),
                  st.sampled_from(["http://", "HTTPS://", " https://", "https:/", "git@", ""]),
                  URLS),
        st.none(), st.integers(), URLS.map(str.encode),
    )
)
@config(150)
def test_setup_cell_rejects_anything_but_an_https_url(url):
    with pytest.raises(ValueError, match="url must be an https:// URL"):
        setup_cell_source(url, TESTED)


@given(url=URLS, suffix=st.sampled_from(["", "/", ".git"]))
@config(30)
def test_repository_url_reads_back_what_the_config_says(url, suffix):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "_config.yml"
        path.write_text(yaml.safe_dump({"repository": {"url": url + suffix}}), encoding="utf-8")
        assert repository_url(path) == url


# --------------------------------------------------------------------------------------------
# helpers.env and helpers.plotting: argument checking
# --------------------------------------------------------------------------------------------


@given(
    st.one_of(
        st.text(max_size=5).map(lambda s: (s, "not one string")),
        st.lists(st.one_of(st.just(""), st.integers(), st.none(), st.binary(max_size=2)),
                 min_size=1, max_size=2).map(lambda names: (names, "non-empty strings")),
    )
)
@config(50)
def test_environment_banner_rejects_bad_package_names(bad):
    packages, message = bad
    with pytest.raises(TypeError, match=message):
        environment_banner(packages)


@given(st.lists(st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True), max_size=2, unique=True))
@config(10)
def test_environment_banner_reports_missing_packages(names):
    names = [f"no-such-distribution-{name}" for name in names]
    banner = environment_banner(names)
    assert banner.startswith(f"JAX {jax.__version__}")
    for name in names:
        assert f"{name} not installed" in banner


@given(
    data_shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
    labels_shape=hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=4),
    resolution=st.integers(min_value=2, max_value=5),
)
@config(150)
def test_plots_reject_data_and_labels_of_the_wrong_shape(data_shape, labels_shape, resolution):
    n = data_shape[0] if len(data_shape) == 2 and data_shape[1] == 2 else None
    assume(n is None or labels_shape != (n,))  # not a valid pair
    message = "labels must have shape" if n is not None else "data must have shape"
    data, labels = np.zeros(data_shape), np.zeros(labels_shape)
    with pytest.raises(ValueError, match=message):  # raised before any figure is made
        plot_xor(data, labels)
    with pytest.raises(ValueError, match=message):
        plot_decision_boundary(must_not_run, data, labels, resolution=resolution)


@given(st.one_of(st.integers(max_value=1), st.booleans(), st.floats(), st.text(max_size=3)))
@config(50)
def test_plot_decision_boundary_rejects_a_bad_resolution(resolution):
    data = XORDataset(8, seed=0)
    with pytest.raises(ValueError, match="resolution must be an int of at least 2"):
        plot_decision_boundary(must_not_run, data.data, data.labels, resolution=resolution)
