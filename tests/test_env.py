"""Unit tests of helpers.env.environment_banner."""

from __future__ import annotations

import jax
import pytest
from execution_status import parse_banner

from helpers import environment_banner


def test_banner_names_version_backend_and_devices():
    banner = environment_banner()
    assert banner.startswith(f"JAX {jax.__version__} | backend: {jax.default_backend()} | ")
    count = len(jax.devices())
    assert f"{count} device" in banner
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
    assert parsed["devices"] == where.split(" | ", 1)[1]


def test_banner_adds_requested_packages():
    banner = environment_banner(("numpy", "surely-not-a-real-package"))
    assert "numpy " in banner
    assert "surely-not-a-real-package not installed" in banner


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("flax", "not one string"), ("", "not one string"), ([""], "non-empty strings"),
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
