"""What every benchmark shares: timing records, the machine description, peak memory."""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported for annotations only: `helpers` imports JAX, which the PyTorch
    from helpers import Timing  # trainer's process loads only late (see benchmarks.training)

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
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # macOS: bytes, else KiB


def minor_page_faults() -> int | None:
    """Minor page faults of this process so far (``ru_minflt``), where the OS counts them."""
    try:
        import resource
    except ImportError:
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


def transparent_huge_pages() -> str | None:
    """Linux's transparent huge pages setting (``always``, ``madvise`` or ``never``), if any.

    NumPy asks for huge pages for its large arrays with ``madvise``: Linux grants them under
    ``always`` and ``madvise``, never under ``never``.
    """
    try:
        setting = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
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
