"""The one-line environment banner each chapter prints under its imports (chapter 1)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import jax

__all__ = ["environment_banner", "parse_banner"]


def environment_banner(packages: Sequence[str] = ()) -> str:
    """Say which JAX, backend and devices this page ran on, in one line.

    ``packages`` names further distributions whose versions to add (for example
    ``("flax", "optax")``); one that is not installed is reported as such.

    >>> environment_banner()  # doctest: +SKIP
    'JAX 0.12.0.1 | backend: cpu | 1 device: cpu'
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
    return (
        f"{' | '.join(versions)} | backend: {jax.default_backend()} | "
        f"{count} device{'s' * (count != 1)}: {described}"
    )


# 'JAX 0.12.0.1 | flax 0.12.12 | optax 0.2.8 | backend: cpu | 1 device: cpu', printed or shown
# as a string's repr.
_BANNER = re.compile(
    r"JAX (?P<jax>\S+)(?P<packages>(?: \| [^|\n]+?)*) \| backend: (?P<backend>[^|\n]+?) \| "
    r"(?P<devices>\d+ devices?: [^\n'\"]+)"
)


def parse_banner(text: str) -> dict[str, Any] | None:
    """The versions and devices in the first environment banner in ``text``, or None.

    The website's execution-status page reads each executed notebook's banner with it.
    """
    match = _BANNER.search(text)
    if match is None:
        return None
    packages = {}
    for part in match["packages"].split(" | ")[1:]:
        part = part.strip()
        if part.endswith(" not installed"):
            packages[part.removesuffix(" not installed")] = "not installed"
        else:
            name, _, version = part.rpartition(" ")
            packages[name or version] = version if name else ""
    return {
        "jax": match["jax"],
        "packages": packages,
        "backend": match["backend"].strip(),
        "devices": match["devices"].strip(),
    }
