"""Unit tests of helpers.errors.expect_error."""

from __future__ import annotations

import tempfile

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


@pytest.mark.parametrize(
    ("error", "max_lines", "printed"),
    [
        (RuntimeError("one\n\nthree\nfour"), 3,
         "RuntimeError (expected):\n    one\n\n    three\n    [...]\n"),
        (ValueError(), None, "ValueError (expected):\n\n"),
        (KeyError("a\nb"), None, "KeyError (expected):\n    'a\\nb'\n"),  # str() is the repr
    ],
)
def test_prints_the_message_indented_and_shortened(capsys, error, max_lines, printed):
    with expect_error(type(error), max_lines=max_lines) as caught:
        raise error
    assert caught.value is error
    assert capsys.readouterr().out == printed


def test_fails_when_nothing_is_raised():
    with pytest.raises(AssertionError, match="expected TypeError to be raised"):
        with expect_error(TypeError):
            pass
    with pytest.raises(AssertionError, match="expected KeyError or TypeError to be raised"):
        with expect_error((KeyError, TypeError)):
            pass


def test_lets_an_unexpected_exception_through(capsys):
    error = KeyError("missing")
    with pytest.raises(KeyError) as info:
        with expect_error(TypeError):
            raise error
    assert info.value is error
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("error", [StopIteration("done"), SystemExit(3), GeneratorExit()])
def test_handles_exceptions_that_a_generator_treats_specially(capsys, error):
    # expect_error is a generator-based context manager: these must still be caught when
    # expected, and pass through unchanged (and unprinted) when not.
    with expect_error(type(error)) as caught:
        raise error
    assert caught.value is error
    assert capsys.readouterr().out.startswith(f"{type(error).__name__} (expected):")
    with pytest.raises(type(error)) as info, expect_error(ValueError):
        raise error
    assert info.value is error
    assert capsys.readouterr().out == ""


def test_match_is_checked_against_the_message(capsys):
    with expect_error(ValueError, match=r"bad \w+"):
        raise ValueError("a bad value")
    with expect_error(ValueError, match=""):  # the empty pattern is found in any message
        raise ValueError("a bad value")
    capsys.readouterr()
    error = ValueError("a bad value")
    with pytest.raises(AssertionError, match="does not match") as info:
        with expect_error(ValueError, match="something else"):
            raise error
    assert info.value.__cause__ is error
    assert capsys.readouterr().out == ""


def test_max_lines_shortens_long_messages(capsys):
    with expect_error(RuntimeError, max_lines=2):
        raise RuntimeError("one\ntwo\nthree\nfour")
    out = capsys.readouterr().out
    assert "two" in out and "three" not in out and "[...]" in out


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "name"),
    [
        (("TypeError",), {}, TypeError, "expected"),
        ((int,), {}, TypeError, "expected"),
        (((),), {}, TypeError, "expected"),
        ((None,), {}, TypeError, "expected"),
        ((ValueError("an instance"),), {}, TypeError, "expected"),
        (((ValueError, int),), {}, TypeError, "expected"),
        ((ValueError,), {"match": 3}, TypeError, "match"),
        ((ValueError,), {"match": b"bad"}, TypeError, "match"),
        ((ValueError,), {"max_lines": 0}, ValueError, "max_lines"),
        ((ValueError,), {"max_lines": True}, ValueError, "max_lines"),
        ((ValueError,), {"max_lines": 1.5}, ValueError, "max_lines"),
    ],
)
def test_rejects_bad_arguments_before_running_the_block(args, kwargs, error, name):
    ran = []
    with pytest.raises(error, match=f"^{name} must be"):
        with expect_error(*args, **kwargs):
            ran.append(True)
    assert not ran


def test_expect_error_prints_no_memory_addresses(capsys):
    def f():
        pass

    with expect_error(TypeError, match="at 0x"):
        raise TypeError(f"cannot hash {f!r}")
    printed = capsys.readouterr().out
    assert "<function test_expect_error_prints_no_memory_addresses.<locals>.f>" in printed
    assert "0x" not in printed


def test_temporary_paths_are_shown_as_tmp(capsys):
    folder = tempfile.mkdtemp()  # /tmp/tmpk3j2... : a new name on every run
    with expect_error(FileNotFoundError, match="not found"):
        raise FileNotFoundError(f"{folder}/run/6 not found")
    assert capsys.readouterr().out.splitlines()[1] == "    <tmp>/run/6 not found"


def test_long_message_lines_are_broken_to_fit_the_column(capsys):
    words = " ".join(f"word{i}" for i in range(40))  # about 270 characters
    with expect_error(ValueError):
        raise ValueError(words)
    printed = capsys.readouterr().out.splitlines()[1:]
    assert len(printed) > 2 and all(len(line) <= 88 for line in printed)
    assert " ".join(line.strip() for line in printed) == words


def test_a_notebook_cells_file_is_shown_as_cell(capsys):
    with expect_error(NameError):
        raise NameError("defined at /tmp/ipykernel_4242/1234567.py:3")
    assert capsys.readouterr().out.splitlines()[1] == "    defined at <cell>:3"


def test_long_lines_keep_their_indentation_words_and_hyphens(capsys):
    words = "    " + " ".join(["well-known-hyphenated-word"] * 6)  # 4 + 161 characters
    long_word = "x" * 100
    with expect_error(ValueError):
        raise ValueError(f"{words}\n{long_word}\n{'y' * 84}")
    printed = capsys.readouterr().out.splitlines()[1:]
    assert printed == [
        "        " + " ".join(["well-known-hyphenated-word"] * 3),
        "        " + " ".join(["well-known-hyphenated-word"] * 3),
        "    " + long_word,  # one word longer than the column is left whole
        "    " + "y" * 84,  # 84 characters fit: 88 with the indentation
    ]


def test_whitespace_only_lines_are_printed_as_they_are(capsys):
    with expect_error(ValueError):
        raise ValueError(" " * 90 + "\nend")
    # textwrap.indent leaves a blank line unindented
    assert capsys.readouterr().out.splitlines()[1:] == [" " * 90, "    end"]


def test_breaks_at_spaces_not_hyphens_and_only_past_84_characters(capsys):
    first = "    " + "x" * 70  # 74 characters: a hyphenated word does not fit after it
    fits = "a" * 40 + " " + "b" * 43  # 84 characters: not broken
    tab = "c\t" + "d" * 82  # 84 characters with a tab: printed as it is
    over = "e" * 42 + " " + "f" * 42  # 85 characters: broken
    with expect_error(ValueError):
        raise ValueError("\n".join([first + " well-known-hyphenated-word", fits, tab, over]))
    assert capsys.readouterr().out.splitlines()[1:] == [
        "    " + first, "        well-known-hyphenated-word",
        "    " + fits, "    " + tab, "    " + "e" * 42, "    " + "f" * 42,
    ]
