"""Showing an expected exception in a notebook (introduced in chapter 1, "Why JAX").

Errors are part of the lesson: a page should show the real exception type and message.
A cell that simply raises would stop "Run all" in Jupyter and Colab, and a bare
``try/except`` would hide it if the error stopped happening. :func:`expect_error` does both
jobs: it prints the exception it was told to expect and fails loudly otherwise.
"""

import os
import re
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["CaughtError", "expect_error"]


@dataclass
class CaughtError:
    """Filled in by :func:`expect_error` with the exception it caught."""

    value: BaseException | None = field(default=None)


def _check_types(expected: object) -> tuple[type[BaseException], ...]:
    types = expected if isinstance(expected, tuple) else (expected,)
    if not types or not all(isinstance(t, type) and issubclass(t, BaseException) for t in types):
        raise TypeError(
            "expected must be an exception class or a non-empty tuple of them, "
            f"got {expected!r}"
        )
    return types


def _fit(line: str, width: int = 84) -> list[str]:
    """A long message line broken at spaces, so it fits the page's column once indented."""
    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    return textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False) or [line]


@contextmanager
def expect_error(
    expected: type[BaseException] | tuple[type[BaseException], ...],
    *,
    match: str | None = None,
    max_lines: int | None = None,
) -> Iterator[CaughtError]:
    """Run a block that must raise ``expected``; print the exception instead of stopping.

    - The expected exception (or a subclass) is caught and printed as ``Type: message``.
    - If the block finishes without raising, an ``AssertionError`` says so.
    - Any other exception propagates unchanged, so the cell fails with it.
    - ``match``, a regular expression, must be found in the message (``re.search``).
    - ``max_lines`` keeps a long message's first lines; lines too wide are broken at spaces.
    - Printing drops memory addresses (``<function f at 0x7f...>`` shows as ``<function f>``),
      writes a notebook cell's file as ``<cell>`` and the temporary directory as ``<tmp>``.

    Use it as ``with expect_error(TypeError): x[0] = 1``; the ``as`` target receives a
    :class:`CaughtError` whose ``value`` is the exception.
    """
    types = _check_types(expected)
    if match is not None and not isinstance(match, str):
        raise TypeError(f"match must be a string (a regular expression), got {match!r}")
    if max_lines is not None and (
        isinstance(max_lines, bool) or not isinstance(max_lines, int) or max_lines < 1
    ):
        raise ValueError(f"max_lines must be a positive int or None, got {max_lines!r}")

    names = " or ".join(t.__name__ for t in types)
    caught = CaughtError()
    try:
        yield caught
    except types as exc:
        message = str(exc)
        if match is not None and not re.search(match, message):
            raise AssertionError(
                f"{type(exc).__name__} was raised, but its message does not match {match!r}:\n"
                f"{message}"
            ) from exc
        caught.value = exc
        # Addresses, a cell's file and temporary paths differ on every run: they mean nothing.
        shown = re.sub(r" at 0x[0-9a-fA-F]+", "", message)
        shown = re.sub(r"\S*/ipykernel_\d+/\d+\.py", "<cell>", shown)
        for temporary in {os.path.realpath(tempfile.gettempdir()), tempfile.gettempdir()}:
            shown = re.sub(re.escape(temporary) + r"(/tmp\w+)?", "<tmp>", shown)
        lines = [wrapped for line in shown.splitlines() or [""] for wrapped in _fit(line)]
        if max_lines is not None and len(lines) > max_lines:
            lines = [*lines[:max_lines], "[...]"]
        print(f"{type(exc).__name__} (expected):")
        print(textwrap.indent("\n".join(lines), "    "))
    else:
        raise AssertionError(f"expected {names} to be raised, but the block finished without one")
