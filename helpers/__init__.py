"""Shared code for the chapters of Executable JAX.

Each module's docstring names the chapter that defines its code, or first teaches its idea.
Importing this module does no work: no devices are touched and no state is created.
"""

from helpers.data import XORDataset, numpy_collate
from helpers.devices import devices_for, simulate_cpu_devices
from helpers.env import environment_banner
from helpers.errors import CaughtError, expect_error
from helpers.plotting import plot_curves, plot_decision_boundary, plot_xor
from helpers.processes import free_port, run_processes
from helpers.timing import (
    Timing,
    faults_per_call,
    format_duration,
    format_ratio,
    median_ratio,
    timeit,
    timeit_interleaved,
    timing_table,
)
from helpers.tracing import count_traces
from helpers.trees import max_difference

__all__ = [
    "CaughtError",
    "Timing",
    "XORDataset",
    "count_traces",
    "devices_for",
    "environment_banner",
    "expect_error",
    "faults_per_call",
    "format_duration",
    "format_ratio",
    "free_port",
    "max_difference",
    "median_ratio",
    "numpy_collate",
    "plot_curves",
    "plot_decision_boundary",
    "plot_xor",
    "run_processes",
    "simulate_cpu_devices",
    "timeit",
    "timeit_interleaved",
    "timing_table",
]
