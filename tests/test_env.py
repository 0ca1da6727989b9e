"""Unit tests of helpers.env.environment_banner."""

from __future__ import annotations

import os
from importlib import metadata

import jax
import pytest
from execution_status import parse_banner

from helpers import environment_banner
from helpers.env import cpu_cores


def test_banner_names_version_backend_devices_and_cores():
    banner = environment_banner()
    assert banner.startswith(f"JAX {jax.__version__} | backend: {jax.default_backend()} | ")
    count = len(jax.devices())
    assert f"{count} device" in banner
    cores = len(os.sched_getaffinity(0))
    assert banner.endswith(f" | {cores} CPU core{'s' * (cores != 1)}")
    assert "\n" not in banner  # short enough for one line


def test_a_long_banner_keeps_to_the_page_width_and_parses_back():
    many = ("flax", "optax", "orbax-checkpoint")  # the most a chapter names
    banner = environment_banner(many)
    versions, where = banner.split("\n")  # one line would be too wide
    assert all(len(line) <= 88 for line in (versions, where))
    assert where.startswith(f"backend: {jax.default_backend()} | ")
    parsed = parse_banner(f"some output\n{banner}\nmore output")
    assert parsed is not None and parsed["backend"] == jax.default_backend()
    assert list(parsed["packages"]) == list(many)
    assert parsed["devices"] + f" | {parsed['cores']} CPU cores" == where.split(" | ", 1)[1]


def test_banner_adds_requested_packages():
    banner = environment_banner(("numpy", "surely-not-a-real-package"))
    assert "numpy " in banner
    assert "surely-not-a-real-package not installed" in banner


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("flax", r"^packages must be a sequence of names, e\.g\. \('flax',\), not one string$"),
        ("", "not one string"), ([""], "non-empty strings"),
        ([3], "non-empty strings"), ([None], "non-empty strings"), ([b"flax"], "non-empty strings"),
    ],
)
def test_banner_rejects_bad_package_names(bad, message):
    with pytest.raises(TypeError, match=message):
        environment_banner(bad)


def test_the_banner_parses_back():
    parsed = parse_banner(environment_banner(("flax", "surely-not-a-real-package")))
    assert parsed is not None
    assert parsed["jax"] == jax.__version__ and parsed["backend"] == jax.default_backend()
    assert parsed["packages"]["surely-not-a-real-package"] == "not installed"
    assert parsed["devices"].startswith(f"{len(jax.devices())} device")
    assert parsed["cores"] == len(os.sched_getaffinity(0))


class FakeDevice:
    def __init__(self, kind: str):
        self.device_kind = kind


@pytest.fixture
def machine(monkeypatch):
    """Set the devices and the backend that the banner sees."""

    def set_up(kinds: list[str], backend: str = "gpu", cores: int = 2) -> None:
        monkeypatch.setattr(jax, "devices", lambda: [FakeDevice(kind) for kind in kinds])
        monkeypatch.setattr(jax, "default_backend", lambda: backend)
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))

    return set_up


@pytest.mark.parametrize(
    ("kinds", "devices"),
    [
        (["cpu"], "1 device: cpu"),
        (["H100", "H100"], "2 devices: 2 × H100"),
        (["TPU v4"] * 8 + ["cpu"], "9 devices: 8 × TPU v4, cpu"),
    ],
)
def test_banner_counts_the_devices_of_each_kind(machine, kinds, devices):
    machine(kinds)
    assert environment_banner() == (
        f"JAX {jax.__version__} | backend: gpu | {devices} | 2 CPU cores"
    )


def test_banner_names_the_versions_of_the_packages_asked_for(machine):
    machine(["cpu"], backend="cpu")
    banner = environment_banner(["numpy", "no-such-pkg"])
    assert banner == (
        f"JAX {jax.__version__} | numpy {metadata.version('numpy')} | no-such-pkg not installed"
        "\nbackend: cpu | 1 device: cpu | 2 CPU cores"  # too wide for one line
    )


def test_banner_breaks_only_a_line_wider_than_88_characters(machine):
    machine(["cpu"], backend="cpu")
    fixed = len(
        f"JAX {jax.__version__} |  not installed | backend: cpu | 1 device: cpu | 2 CPU cores"
    )
    fits = "p" * (88 - fixed)
    assert len(environment_banner([fits])) == 88 and "\n" not in environment_banner([fits])
    versions, where = environment_banner([fits + "q"]).split("\n")
    assert versions == f"JAX {jax.__version__} | {fits}q not installed"
    assert where == "backend: cpu | 1 device: cpu | 2 CPU cores"


@pytest.mark.parametrize(("cores", "named"), [(1, "1 CPU core"), (16, "16 CPU cores")])
def test_banner_names_the_cores_this_process_may_use(machine, cores, named):
    machine(["cpu"], backend="cpu", cores=cores)
    assert environment_banner().endswith(f"| 1 device: cpu | {named}")


def test_cores_fall_back_to_the_machine_count_without_an_affinity_call(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert environment_banner().endswith(" | 6 CPU cores")


def test_cpu_cores_without_an_affinity_call_falls_back_to_the_count_or_one(monkeypatch):
    monkeypatch.delattr("os.sched_getaffinity", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert cpu_cores() == 6
    monkeypatch.setattr("os.cpu_count", lambda: None)  # "undetermined"
    assert cpu_cores() == 1
