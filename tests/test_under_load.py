"""`make test-under-load` (pytest's `--under-load`): one busy process per CPU core, stopped at
the end of the session."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

from conftest import _keep_the_cores_busy


def _busy_children() -> dict[int, float]:
    """This process's children that spin, with the CPU seconds each has used."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue  # gone meanwhile
        if int(fields[1]) == os.getpid() and b"while True: pass" in command:
            found[int(stat.parent.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf(
                "SC_CLK_TCK")
    return found


def test_under_load_keeps_every_core_busy_until_the_session_ends():
    stops = []
    _keep_the_cores_busy(SimpleNamespace(add_cleanup=stops.append))
    try:
        cores = len(os.sched_getaffinity(0))
        # Popen returns as exec begins, a moment before the child's command line is readable.
        deadline = time.monotonic() + 30
        while len(first := _busy_children()) < cores and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)
        then = _busy_children()
        assert len(first) == len(then) == cores, (first, then)
        # Each has computed meanwhile (however busy the machine), none waits or sleeps.
        assert all(then[pid] > first[pid] for pid in then), (first, then)
    finally:
        (stop,) = stops
        stop()
    assert _busy_children() == {}
