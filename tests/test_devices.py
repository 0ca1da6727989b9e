"""Unit tests of helpers.devices."""

from __future__ import annotations

import re
import subprocess
import sys

import jax
import pytest

from helpers import devices_for, simulate_cpu_devices


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_simulate_cpu_devices_before_first_use():
    result = _python(
        "import jax, helpers\n"
        "helpers.simulate_cpu_devices(4)\n"
        "helpers.simulate_cpu_devices(4)  # a re-run cell is harmless\n"
        "print(len(jax.devices('cpu')), len(helpers.devices_for(4)))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["4", "4"]


def test_simulate_cpu_devices_too_late_says_what_to_do():
    result = _python("import jax, helpers\njax.devices()\nhelpers.simulate_cpu_devices(3)")
    assert result.returncode != 0
    assert "restart the kernel" in result.stderr


def test_devices_for_returns_the_default_backends_devices_when_enough():
    devices = jax.devices()
    assert devices_for(1) == [devices[0]]
    assert devices_for(len(devices)) == list(devices)


def test_devices_for_explains_when_there_are_too_few():
    with pytest.raises(RuntimeError, match=re.escape("helpers.simulate_cpu_devices(10000) first")):
        devices_for(10_000)


@pytest.mark.parametrize(
    ("bad", "error"),
    [(0, ValueError), (-1, ValueError), (2.0, TypeError), (True, TypeError), (None, TypeError),
     ("2", TypeError)],
)
def test_device_counts_are_validated_before_touching_jax(bad, error):
    before = jax.config.jax_num_cpu_devices
    with pytest.raises(error, match="the number of devices must be"):
        devices_for(bad)
    with pytest.raises(error, match="the number of devices must be"):
        simulate_cpu_devices(bad)
    assert jax.config.jax_num_cpu_devices == before
