"""Shared code for the chapters of Executable JAX.

Each function's docstring names the chapter that first teaches the idea it packages.
Importing this module does no work: no devices are touched and no state is created.
"""

from helpers.env import environment_banner
from helpers.errors import CaughtError, expect_error
from helpers.timing import Timing, format_duration, timeit, timing_table

__all__ = [
    "CaughtError",
    "Timing",
    "environment_banner",
    "expect_error",
    "format_duration",
    "timeit",
    "timing_table",
]
