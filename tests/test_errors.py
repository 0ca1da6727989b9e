"""Unit tests of helpers.errors.expect_error."""

from __future__ import annotations

import pytest

from helpers import expect_error


def test_prints_the_expected_exception(capsys):
    with expect_error(ZeroDivisionError) as caught:
        1 / 0  # noqa: B018
    out = capsys.readouterr().out
    assert out.startswith("ZeroDivisionError (expected):\n")
    assert "division by zero" in out
    assert isinstance(caught.value, ZeroDivisionError)


def test_accepts_subclasses_and_tuples(capsys):
    with expect_error((KeyError, TypeError)):
        {}["missing"]
    assert capsys.readouterr().out.startswith("KeyError (expected):")
    with expect_error(LookupError):  # KeyError is a LookupError
        {}["missing"]


def test_fails_when_nothing_is_raised():
    with pytest.raises(AssertionError, match="expected TypeError to be raised"):
        with expect_error(TypeError):
            pass


def test_lets_an_unexpected_exception_through():
    with pytest.raises(KeyError):
        with expect_error(TypeError):
            {}["missing"]


def test_match_is_checked_against_the_message(capsys):
    with expect_error(ValueError, match=r"bad \w+"):
        raise ValueError("a bad value")
    with pytest.raises(AssertionError, match="does not match"):
        with expect_error(ValueError, match="something else"):
            raise ValueError("a bad value")


def test_max_lines_shortens_long_messages(capsys):
    with expect_error(RuntimeError, max_lines=2):
        raise RuntimeError("one\ntwo\nthree\nfour")
    out = capsys.readouterr().out
    assert "two" in out and "three" not in out and "[...]" in out


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        (("TypeError",), {}, TypeError),
        ((int,), {}, TypeError),
        (((),), {}, TypeError),
        ((ValueError,), {"match": 3}, TypeError),
        ((ValueError,), {"max_lines": 0}, ValueError),
    ],
)
def test_rejects_bad_arguments(args, kwargs, error):
    with pytest.raises(error):
        with expect_error(*args, **kwargs):
            raise ValueError("never reached by the check")


def test_expect_error_prints_no_memory_addresses(capsys):
    def f():
        pass

    with expect_error(TypeError, match="at 0x"):
        raise TypeError(f"cannot hash {f!r}")
    printed = capsys.readouterr().out
    assert "<function test_expect_error_prints_no_memory_addresses.<locals>.f>" in printed
    assert "0x" not in printed
