"""The environment banner each chapter prints under its imports.

Every chapter prints it under its imports; chapter 1 (``book/01_why_jax.ipynb``) says what it
shows. The website's execution-status page (``_ext/execution_status.py``) reads it back.
"""

import os
from collections import Counter
from collections.abc import Sequence
from importlib import metadata

import jax

__all__ = ["environment_banner"]

# The width of the website's code column, in characters (the notebooks' code keeps to it too).
PAGE_WIDTH = 88


def environment_banner(packages: Sequence[str] = ()) -> str:
    """Say which JAX, backend and devices this page ran on, in one line of the page's width.

    ``packages`` names further distributions whose versions to add (for example
    ``("flax", "optax")``); one that is not installed is reported as such. Where one line
    would be wider than the page's code column (88 characters), the backend and devices go
    on a second line.

    The CPU cores this process may run on come last: every timing on a page depends on them
    (JAX's CPU backend and NumPy use several threads), whatever the devices.

    >>> environment_banner()  # doctest: +SKIP
    'JAX 0.12.0.1 | backend: cpu | 1 device: cpu | 2 CPU cores'
    """
    if isinstance(packages, str):
        raise TypeError("packages must be a sequence of names, e.g. ('flax',), not one string")
    versions = [f"JAX {jax.__version__}"]
    for name in packages:
        if not isinstance(name, str) or not name:
            raise TypeError(f"package names must be non-empty strings, got {name!r}")
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} not installed")
    devices = jax.devices()
    kinds = Counter(device.device_kind for device in devices)
    described = ", ".join(f"{n} × {kind}" if n > 1 else kind for kind, n in kinds.items())
    count = len(devices)
    cores = cpu_cores()
    where = (
        f"backend: {jax.default_backend()} | "
        f"{count} device{'s' * (count != 1)}: {described} | "
        f"{cores} CPU core{'s' * (cores != 1)}"
    )
    line = f"{' | '.join(versions)} | {where}"
    return line if len(line) <= PAGE_WIDTH else f"{' | '.join(versions)}\n{where}"


def cpu_cores() -> int:
    """The CPU cores this process may run on (a container or `taskset` may allow fewer than
    the machine has, and then ``os.cpu_count()`` overstates them)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1
