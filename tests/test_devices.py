"""Unit tests of helpers.devices."""

from __future__ import annotations

import re
import subprocess
import sys

import jax
import numpy as np
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


class FakeJax:
    """Stands in for what helpers.devices uses of jax: its config and its device lists."""

    def __init__(self, default: int, cpu: int, *, in_use: bool = False):
        self.lists = {None: [f"dev{i}" for i in range(default)],
                      "cpu": [f"cpu{i}" for i in range(cpu)]}
        self.in_use, self.updates = in_use, []
        self.config = self

    def update(self, name, value):
        self.updates.append((name, value))
        if self.in_use:
            raise RuntimeError("jax_num_cpu_devices config should be updated before backends"
                               " are initialized")
        self.lists["cpu"] = [f"cpu{i}" for i in range(value)]

    def devices(self, backend=None):
        return self.lists[backend]


def test_simulate_cpu_devices_sets_jax_num_cpu_devices(monkeypatch):
    fake = FakeJax(1, 1)
    monkeypatch.setattr("helpers.devices.jax", fake)
    assert simulate_cpu_devices(4) is None
    assert fake.updates == [("jax_num_cpu_devices", 4)]


def test_simulate_cpu_devices_once_jax_is_in_use(monkeypatch):
    fake = FakeJax(1, 4, in_use=True)
    monkeypatch.setattr("helpers.devices.jax", fake)
    simulate_cpu_devices(4)  # already so (a re-run cell): nothing to do
    with pytest.raises(RuntimeError) as caught:
        simulate_cpu_devices(3)
    assert str(caught.value) == (
        "simulate_cpu_devices(3) must run before JAX uses any device: restart the kernel "
        "and call it right after `import jax`"
    )
    assert isinstance(caught.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    ("default", "cpu", "n", "chosen"),
    [(4, 8, 4, ["dev0", "dev1", "dev2", "dev3"]), (4, 8, 2, ["dev0", "dev1"]),
     (1, 8, 5, ["cpu0", "cpu1", "cpu2", "cpu3", "cpu4"]), (2, 8, 8, [f"cpu{i}" for i in range(8)])],
)
def test_devices_for_prefers_the_default_backend(monkeypatch, default, cpu, n, chosen):
    monkeypatch.setattr("helpers.devices.jax", FakeJax(default, cpu))
    assert devices_for(n) == chosen


def test_devices_for_says_how_many_there_are(monkeypatch):
    monkeypatch.setattr("helpers.devices.jax", FakeJax(2, 3))
    with pytest.raises(RuntimeError) as caught:
        devices_for(4)
    assert str(caught.value) == (
        "4 devices were asked for, but the default backend has 2 and the CPU 3: call "
        "helpers.simulate_cpu_devices(4) first"
    )


@pytest.mark.parametrize(
    ("bad", "message"),
    [(0, "the number of devices must be at least 1, got 0"),
     (2.0, "the number of devices must be an int, got 2.0"),
     (True, "the number of devices must be an int, got True")],
)
def test_device_count_messages(monkeypatch, bad, message):
    monkeypatch.setattr("helpers.devices.jax", FakeJax(1, 1))
    with pytest.raises((TypeError, ValueError), match=f"^{re.escape(message)}$"):
        devices_for(bad)


def test_a_numpy_integer_is_a_count(monkeypatch):
    monkeypatch.setattr("helpers.devices.jax", FakeJax(1, 1))
    assert devices_for(np.int64(1)) == ["dev0"]
