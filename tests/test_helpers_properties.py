"""Property-based tests (Hypothesis): what must hold for every input of a kind.

Only real properties live here: how ``format_duration`` rounds and picks its unit, the bounds
of a ``Timing``, ``numpy_collate``'s round trip and the set-up cell's URL. Argument checks are
tested by example beside each helper's other tests. The profile below derandomizes (CI tries
the inputs a laptop tries; explore with ``@seed(N)``), writes no database and sets no
deadline; ``@example`` cases are counterexamples these properties once found.
"""

from __future__ import annotations

import ast
import atexit
import math
import os
import re
import shutil
import string
import tempfile
from decimal import Decimal
from pathlib import Path

import hypothesis.extra.numpy as hnp
import numpy as np
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from helpers import Timing, XORDataset, format_duration, numpy_collate
from tools.notebooks import TAUGHT_LIBRARIES, repository_url, setup_cell_source

PROFILE = "helpers-properties"
settings.register_profile(PROFILE, derandomize=True, database=None, deadline=None, print_blob=False)

# Hypothesis's caches go to a temporary folder, not ./.hypothesis, unless
# HYPOTHESIS_STORAGE_DIRECTORY says where.
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    _STORAGE = tempfile.mkdtemp(prefix="hypothesis-")
    set_hypothesis_home_dir(_STORAGE)
    atexit.register(shutil.rmtree, _STORAGE, ignore_errors=True)


def config(max_examples: int) -> settings:
    """The profile above with a per-test number of examples (the whole file runs in seconds)."""
    return settings(settings.get_profile(PROFILE), max_examples=max_examples)


# format_duration: three significant digits, in the right unit

SCALES = {"s": Decimal(1), "ms": Decimal("1e-3"), "µs": Decimal("1e-6"), "ns": Decimal("1e-9")}
LARGER_UNIT = {"ns": "µs", "µs": "ms", "ms": "s", "s": None}

# Every finite non-negative float (subnormals and 1.8e308 included), integers, the readable
# range from 1 ns to 999 s, and values just around each unit boundary (x 1000), where
# rounding to 3 digits can carry into 1000.
DURATIONS = st.one_of(
    st.floats(min_value=0.0, allow_nan=False, allow_infinity=False),
    st.integers(min_value=0, max_value=2**53),
    st.floats(min_value=1e-9, max_value=999.0),
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
@config(400)
@example(0.0)
@example(5e-324)  # the smallest subnormal: 3 significant digits are kept even there
@example(0.0009996)  # rounds up to 1 ms: once printed as 1000 of the smaller unit
def test_format_duration_keeps_three_significant_digits_in_the_right_unit(seconds):
    text = format_duration(seconds)
    number, unit = parse_duration(text)
    assert len(number.normalize().as_tuple().digits) <= 3
    # At least 1 of the unit (but for ns, the smallest) and less than 1000 (but for s).
    assert number >= 1 or unit == "ns"
    assert number < 1000 or unit == "s"
    larger = LARGER_UNIT[unit]
    assert number < 1000 or larger is None or seconds < float(SCALES[larger])
    # Within rounding: at most half a unit in the third significant digit of the exact value
    # in that unit (plus a hair for the float division), hence a relative error < 0.5%.
    # Below 1 ns the digits are still significant ones ('0.001 ns', '4.94e-315 ns').
    exact = Decimal(seconds) / SCALES[unit]
    if exact == 0:
        assert number == 0
    else:
        half_unit = Decimal(5) * Decimal(10) ** (exact.adjusted() - 3)
        assert abs(number - exact) <= half_unit * (1 + Decimal("1e-12")), (seconds, text)
        assert abs(number - exact) / exact < Decimal("0.005")
    # Readable from 1 ns to 999 s: a plain decimal, never exponent notation.
    if seconds == 0 or 1e-9 <= seconds <= 999:
        assert re.fullmatch(r"\d{1,3}(\.\d{1,2})? (ns|µs|ms|s)", text), (seconds, text)


@given(DURATIONS, DURATIONS)
@config(300)
@example(0.0009999, 0.001)  # '1e+03 µs' and '1 ms': equal, not decreasing
def test_format_duration_is_monotonic(a, b):
    a, b = sorted((a, b))
    value_a, unit_a = parse_duration(format_duration(a))
    value_b, unit_b = parse_duration(format_duration(b))
    assert value_a * SCALES[unit_a] <= value_b * SCALES[unit_b], (a, b)


# Timing: median and spread are bounded by the runs

RUN_TIMES = st.floats(min_value=0.0, max_value=1e3, allow_nan=False)


@st.composite
def nearly_equal_pairs(draw: st.DrawFn) -> list[float]:
    """Two run times a few ulps apart: what two runs of a very regular function give."""
    a = b = draw(st.floats(min_value=1e-7, max_value=10.0))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        b = math.nextafter(b, math.inf)
    return [a, b] if draw(st.booleans()) else [b, a]


@given(
    st.one_of(
        st.lists(RUN_TIMES, min_size=1, max_size=15),
        st.builds(lambda t, n: [t] * n, RUN_TIMES, st.integers(min_value=1, max_value=20)),
        nearly_equal_pairs(),
    ),
    st.integers(min_value=1, max_value=10**6),
)
@config(400)
@example([0.9369691586445807, 0.9369691586445809], 1)  # once a negative spread
def test_timing_median_and_spread_are_bounded_by_the_runs(runs, calls):
    timing = Timing(tuple(runs), calls)
    low, high = min(runs), max(runs)
    assert low <= timing.median <= high
    assert 0.0 <= timing.spread <= (high - low) / 2 + 1e-12 * high
    if low == high:  # one run, or identical runs
        assert timing.median == low and timing.spread == 0.0
    # str() never raises, and says what the properties say, in format_duration's format.
    match = re.fullmatch(
        r"(.+) ± (.+) per call \(median ± half IQR of (\d+) runs?, (\d+) calls? each\)",
        str(timing),
    )
    assert match, str(timing)
    assert match[1] == format_duration(timing.median)
    assert match[2] == format_duration(timing.spread)
    assert (int(match[3]), int(match[4])) == (len(runs), calls)


# numpy_collate: a batch unstacks back into its samples

LEAF_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_]
# A strategy for the samples of one batch: tuples nested up to 6 leaves, each leaf an array
# of one shape and dtype, a Python int or a Python float. All samples of a batch are drawn
# from the same one, so they share their structure.
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)
SAMPLES = st.recursive(
    st.builds(hnp.arrays, st.sampled_from(LEAF_DTYPES), SHAPES)
    | st.just(st.integers(min_value=-(2**62), max_value=2**62))
    | st.just(st.floats()),
    lambda children: st.lists(children, min_size=1, max_size=3).map(
        lambda fields: st.tuples(*fields)
    ),
    max_leaves=6,
)


def assert_collated(result, samples: list) -> None:
    """``result`` has the samples' tuples, and each leaf is the samples' leaves stacked along a
    new first axis, in their dtype."""
    first = samples[0]
    if isinstance(first, tuple):
        assert type(result) is tuple and len(result) == len(first)
        for i, field in enumerate(result):
            assert_collated(field, [sample[i] for sample in samples])
    else:
        leaves = [np.asarray(sample) for sample in samples]
        assert isinstance(result, np.ndarray)
        assert result.shape == (len(samples), *leaves[0].shape)
        assert result.dtype == leaves[0].dtype
        for row, leaf in zip(result, leaves, strict=True):
            np.testing.assert_array_equal(row, leaf)  # NaN equals NaN here


@given(samples=SAMPLES, batch_size=st.integers(min_value=1, max_value=6), data=st.data())
@config(150)
def test_numpy_collate_stacks_along_a_new_batch_axis_and_unstacks_back(
    samples, batch_size, data
):
    batch = [data.draw(samples) for _ in range(batch_size)]
    assert_collated(numpy_collate(batch), batch)


@given(
    st.integers(min_value=1, max_value=500), st.integers(min_value=0, max_value=2**32 - 1),
    st.floats(min_value=0.0, max_value=0.3), st.integers(min_value=1, max_value=64),
)
@config(50)
def test_xor_dataset_batches_collate_back_into_the_dataset(size, seed, noise, batch_size):
    """What a DataLoader with ``collate_fn=numpy_collate`` and no shuffling hands over."""
    ds = XORDataset(size, seed, noise)
    batches = [numpy_collate([ds[i] for i in range(start, min(start + batch_size, size))])
               for start in range(0, size, batch_size)]
    xs, ys = (np.concatenate(parts) for parts in zip(*batches, strict=True))
    assert xs.dtype == np.float32 and ys.dtype == np.int32
    np.testing.assert_array_equal(xs, ds.data)
    np.testing.assert_array_equal(ys, ds.labels)


# The set-up cell installs from the repository URL in _config.yml

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
TESTED = {name: "1.2.3" for name in TAUGHT_LIBRARIES}


def install_sources(source: str) -> list[str]:
    """The string constants of the cell that pip could install from (``git+...``)."""
    strings = [node.value for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Constant)]
    return [value for value in strings if isinstance(value, str) and value.startswith("git+")]


@given(url=URLS, suffix=st.sampled_from(["", "/", ".git", ".git/", "//"]))
@config(150)
def test_the_setup_cell_installs_from_exactly_the_configured_url(url, suffix):
    """However _config.yml ends the URL, it reads back without the suffix, and the cell is
    valid Python that installs from ``git+<url>.git`` and nothing else."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "_config.yml"
        path.write_text(yaml.safe_dump({"repository": {"url": url + suffix}}), encoding="utf-8")
        assert repository_url(path) == url
    source = setup_cell_source(url + suffix, TESTED)
    compile(source, "setup-cell", "exec")
    assert install_sources(source) == [f"git+{url}.git"]
    assert source == setup_cell_source(url, TESTED)
