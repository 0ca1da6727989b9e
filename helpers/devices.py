"""Several devices on any machine (chapter 12, "Vectorization and parallelism").

JAX can present the CPU as several devices, so sharding and collectives run on a laptop.
The setting must be made before JAX first uses a device.
"""

import numbers

import jax

__all__ = ["devices_for", "simulate_cpu_devices"]


def _count(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"the number of devices must be an int, got {n!r}")
    if n < 1:
        raise ValueError(f"the number of devices must be at least 1, got {n}")
    return int(n)


def simulate_cpu_devices(n: int) -> None:
    """Make the CPU backend present ``n`` devices; call it right after ``import jax``.

    Accelerators are unaffected: on a GPU machine ``jax.devices()`` still lists the GPUs,
    and ``jax.devices("cpu")`` lists the ``n`` CPU devices.
    """
    n = _count(n)
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError as error:
        if len(jax.devices("cpu")) == n:  # already set up this way (a re-run cell)
            return
        raise RuntimeError(
            f"simulate_cpu_devices({n}) must run before JAX uses any device: restart the "
            "kernel and call it right after `import jax`"
        ) from error


def devices_for(n: int) -> list[jax.Device]:
    """``n`` devices to spread work over: the default backend's if it has that many,
    otherwise the CPU's (see :func:`simulate_cpu_devices`)."""
    n = _count(n)
    for devices in (jax.devices(), jax.devices("cpu")):
        if len(devices) >= n:
            return list(devices[:n])
    raise RuntimeError(
        f"{n} devices were asked for, but the default backend has {len(jax.devices())} and "
        f"the CPU {len(jax.devices('cpu'))}: call helpers.simulate_cpu_devices({n}) first"
    )
