"""What every benchmark shares: timing records, the machine description, peak memory."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported for annotations only: `helpers` imports JAX, which the PyTorch
    from helpers import Timing  # trainers' processes never load (see benchmarks.training)

try:
    import resource
except ImportError:  # Windows
    resource = None

PACKAGES = ("jax", "jaxlib", "flax", "optax", "torch", "numpy")


def timing_record(timing: Timing) -> dict[str, Any]:
    """A :class:`helpers.Timing` as JSON: every run's seconds per call, median and spread."""
    return {
        "median_s": timing.median,
        "spread_s": timing.spread,  # half the interquartile range of the runs
        "runs_s": list(timing.per_call),
        "calls_per_run": timing.calls_per_run,
    }


def seconds(fn: Callable[[], Any]) -> float:
    """Wall time of one call of ``fn()``, in seconds."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, where the OS reports them."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):  # Windows has no load average
        return None


def peak_rss_bytes() -> int | None:
    """This process's peak resident memory so far, in bytes.

    On Linux this is ``VmHWM`` from ``/proc/self/status``, the high-water mark of the current
    program's memory. ``ru_maxrss`` would do elsewhere, but on Linux a process started by
    another inherits the parent's peak as its own starting value, which would hide a small
    trainer's peak behind the parent's.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # reported in kB
    except OSError:
        pass
    if resource is None:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # macOS: bytes, else KiB


def minor_page_faults() -> int | None:
    """Minor page faults of this process so far (``ru_minflt``), where the OS counts them."""
    if resource is None:
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


def versions() -> dict[str, str | None]:
    """Installed versions of the libraries the benchmarks use (None where not installed)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def cpu_model() -> str:
    """The CPU's model name: /proc/cpuinfo on Linux, else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def last_level_cache_bytes() -> int | None:
    """Size of the CPU's largest cache level, where Linux's sysfs reports it."""
    caches = {}
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level = int((index / "level").read_text())
            size = (index / "size").read_text().strip()  # for example "32768K"
        except (OSError, ValueError):
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(size[-1:], 1)
        caches[level] = int(size.rstrip("KMG")) * scale
    return caches[max(caches)] if caches else None


def transparent_huge_pages(setting_name: str = "enabled") -> str | None:
    """Linux's transparent huge pages setting (``always``, ``madvise`` or ``never``), if any.

    NumPy asks for huge pages for its large arrays with ``madvise``: Linux grants them under
    ``always`` and ``madvise``, never under ``never``. ``setting_name="defrag"`` reads how hard
    Linux tries to find a free 2 MiB page when one is asked for.
    """
    try:
        setting = Path(f"/sys/kernel/mm/transparent_hugepage/{setting_name}").read_text()
    except OSError:
        return None
    chosen = [word for word in setting.split() if word.startswith("[")]
    return chosen[0].strip("[]") if chosen else None


def machine_info() -> dict[str, Any]:
    """Where the numbers come from: OS, CPU, JAX backend and devices, library versions."""
    import jax

    devices = jax.devices()
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "last_level_cache_bytes": last_level_cache_bytes(),
        "transparent_huge_pages": transparent_huge_pages(),
        "transparent_huge_pages_defrag": transparent_huge_pages("defrag"),
        "libc": " ".join(platform.libc_ver()) or None,
        "jax_backend": jax.default_backend(),
        "jax_devices": [
            {"id": d.id, "platform": d.platform, "device_kind": d.device_kind} for d in devices
        ],
        "versions": versions(),
    }
    try:
        import torch  # noqa: F401  (only to say where PyTorch runs)

        info["torch_device"] = "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        info["torch_device"] = None
    return info


def device_peak_bytes() -> int | None:
    """Peak bytes in use on JAX's first device, where the backend reports it (GPU, TPU)."""
    import jax

    stats = jax.devices()[0].memory_stats()  # None on the CPU backend
    return int(stats["peak_bytes_in_use"]) if stats and "peak_bytes_in_use" in stats else None


# --- Timing in interleaved rounds (JAX and helpers imported only when used) ---------------


class Variant:
    """One thing to time: ``run(calls)`` returns the seconds per call of ``calls`` calls.

    ``call(arg)`` is the timed work; ``prepare()`` makes its argument before each call, outside
    the clock where ``evict`` or ``keep`` is given (a fresh copy of a donated input). With
    ``evict``, the caches are emptied of the call's data before each call, also outside the
    clock. With ``keep``, the result outlives
    the clock (a donated result, which a real loop would donate to its next call and never
    free); otherwise freeing it is part of the call, as in a loop ``y = f(x)``, which frees
    the previous ``y`` at every step.
    """

    def __init__(self, call: Callable[[Any], Any], prepare: Callable[[], Any] = lambda: None,
                 evict: Callable[[], None] | None = None, keep: bool = False) -> None:
        self.call, self.prepare, self.evict, self.keep = call, prepare, evict, keep

    def _once(self, usage: dict[str, float] | None = None) -> float:
        import jax

        arg = self.prepare()
        if self.evict is not None:
            self.evict()
        before = _usage() if usage is not None else None
        start = time.perf_counter()
        result = jax.block_until_ready(self.call(arg))
        if not self.keep:
            del result
        elapsed = time.perf_counter() - start
        if usage is not None:
            for key, value in _usage().items():
                usage[key] += value - before[key]
        return elapsed

    def run(self, calls: int) -> float:
        if self.evict is None and not self.keep:
            # Nothing to keep out of the clock but ``prepare``, which must then be cheap (it
            # hands over an existing argument): one clock around all the calls, as
            # ``helpers.timeit`` does, so that reading the clock costs nothing per call.
            import jax

            start = time.perf_counter()
            for _ in range(calls):
                jax.block_until_ready(self.call(self.prepare()))
            return (time.perf_counter() - start) / calls
        return sum(self._once() for _ in range(calls)) / calls

    def profile(self, calls: int = 3) -> dict[str, float | None]:
        """Minor page faults and user and system CPU seconds per call, all threads counted.

        System time is the kernel working for the process: here mostly taking page faults,
        which fill fresh pages with zeros, and giving memory back.
        """
        self._once()
        if minor_page_faults() is None or resource is None:
            return {"page_faults_per_call": None, "cpu_user_s_per_call": None,
                    "cpu_system_s_per_call": None}
        usage = {"page_faults": 0.0, "user": 0.0, "system": 0.0}
        for _ in range(calls):
            self._once(usage)
        return {"page_faults_per_call": usage["page_faults"] / calls,
                "cpu_user_s_per_call": usage["user"] / calls,
                "cpu_system_s_per_call": usage["system"] / calls}


def _usage() -> dict[str, float]:
    found = resource.getrusage(resource.RUSAGE_SELF)
    return {"page_faults": float(found.ru_minflt), "user": found.ru_utime,
            "system": found.ru_stime}


def smallest_count(long_enough: Callable[[int], bool]) -> int:
    """The first count in 1, 2, 5, 10, 20, 50, ... for which ``long_enough(count)`` holds
    (``long_enough`` runs that many calls and says whether the run lasted long enough)."""
    calls = 1
    while True:
        for factor in (1, 2, 5):
            if long_enough(calls * factor):
                return calls * factor
        calls *= 10


def calibrate(variant, min_run_seconds: float) -> int:
    """A warm-up call, then the smallest count in 1, 2, 5, 10, ... that lasts long enough.

    Long enough counts the wall time of the whole run, preparation and eviction included, so
    that a variant whose call is short but whose preparation is long still runs a few calls.
    """
    variant.run(1)
    return smallest_count(
        lambda count: seconds(lambda: variant.run(count)) >= min_run_seconds)


def interleaved(variants: dict[str, Any], rounds: int,
                min_run_seconds: float = 0.02) -> dict[str, Timing]:
    """Time every variant once per round, for ``rounds`` rounds, in a rotating order.

    A slow spell of the machine then falls on every variant alike, instead of on whichever
    was being timed at the moment. Each run lasts at least ``min_run_seconds``.
    """
    import helpers

    names = list(variants)
    calls = {name: calibrate(variants[name], min_run_seconds) for name in names}
    runs: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            runs[name].append(variants[name].run(calls[name]))
    return {name: helpers.Timing(tuple(runs[name]), calls[name]) for name in names}


class WorkerProcess:
    """A benchmark's worker process, driven one JSON request at a time on its standard input;
    it answers each with one JSON line on its standard output (``serve`` in ``training.py``
    and ``lm.py``). A worker that dies raises RuntimeError with the end of its stderr."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.name = name
        self.errors = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            [sys.executable, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.errors, text=True, env={**os.environ, **(env or {})})
        self.hello: dict[str, Any] | None = None

    def read(self) -> dict[str, Any]:
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            self.errors.seek(0)
            raise RuntimeError(f"trainer {self.name} failed:\n{self.errors.read()[-3000:]}")
        return json.loads(line)

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.write(json.dumps({"quit": True}) + "\n")
            self.process.stdin.close()
            self.process.wait()
        self.errors.close()
