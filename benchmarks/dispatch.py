"""Dispatch overhead: what one tiny operation costs, and what a host round trip costs.

1. ``x + 1`` on an array of 8 numbers: NumPy, PyTorch eager, JAX eager and a jitted function.
   The arithmetic is nothing; the time is the overhead of getting an operation to run.
2. The jitted ``x + 1`` against a jitted tiny training step, timed alike two ways: waiting for
   every call's result (the latency of one call), and 100 calls from a Python loop that never
   waits (the time per call when calls queue up).
3. 100 steps of the tiny jitted update, three ways: dispatched from a Python loop with the
   results left on the device; the same loop converting the loss to a Python float at every
   step (a host round trip: Python waits for the device, then copies the number back); and all
   100 steps inside one compiled ``lax.scan``.
4. The ``lax.scan`` at several lengths: what one call costs whatever its length, and what each
   step inside it adds.

All of them are timed together, in interleaved rounds.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.common import Variant, interleaved, seconds, timing_record

TINY = 8
SCAN_LENGTHS = (10, 100, 1000)


def add_one(x):
    return x + 1


def step(w):
    """One tiny update with a loss, like a training step on a very small model."""
    loss = jnp.sum(w * w)
    return w - 0.01 * 2 * w, loss


def add_one_loop(add_one_jit, x, calls):
    """``calls`` jitted additions in a row, each on the last one's result, never waiting."""
    results = []
    for _ in range(calls):
        x = add_one_jit(x)
        results.append(x)
    return x, results


def loop_on_device(step_jit, w, steps):
    losses = []
    for _ in range(steps):
        w, loss = step_jit(w)
        losses.append(loss)  # stays on the device: Python never waits inside the loop
    return w, losses


def loop_with_round_trips(step_jit, w, steps):
    losses = []
    for _ in range(steps):
        w, loss = step_jit(w)
        losses.append(float(loss))  # wait for the device, copy one number to the host
    return w, losses


def run(quick: bool = False) -> dict[str, Any]:
    """The whole dispatch benchmark as a JSON-ready dict.

    Every timing is made in the same interleaved rounds (``benchmarks.common.interleaved``),
    so that a machine shared with other programs slows them alike.
    """
    repeat = 3 if quick else 21
    steps = 10 if quick else 100

    x_np = np.ones(TINY, dtype=np.float32)
    x = jnp.asarray(x_np)
    add_one_jit = jax.jit(add_one)
    w = jnp.ones((TINY,))
    step_jit = jax.jit(step)

    def scanned_of_length(length):
        def scanned(w):
            return jax.lax.scan(lambda w, _: step(w), w, length=length)

        return scanned

    scanned = scanned_of_length(steps)
    scanned_jit = jax.jit(scanned)
    # Each compilation happens once: single measurements.
    compile_s = {
        "add_one": seconds(lambda: jax.jit(add_one).lower(x).compile()),
        "step": seconds(lambda: jax.jit(step).lower(w).compile()),
        "scan": seconds(lambda: jax.jit(scanned).lower(w).compile()),
    }
    variants = {
        "numpy": Variant(add_one, lambda: x_np),
        "jax_eager": Variant(add_one, lambda: x),
        "jax_jit": Variant(add_one_jit, lambda: x),
        "step_jit": Variant(step_jit, lambda: w),
        "add_one_loop": Variant(lambda _: add_one_loop(add_one_jit, x, steps)),
        "python_loop_on_device": Variant(lambda _: loop_on_device(step_jit, w, steps)),
        "python_loop_round_trip": Variant(lambda _: loop_with_round_trips(step_jit, w, steps)),
        "lax_scan": Variant(scanned_jit, lambda: w),
        **{f"scan_{length}": Variant(jax.jit(scanned_of_length(length)), lambda: w)
           for length in SCAN_LENGTHS},
    }
    try:
        import torch

        x_torch = torch.ones(TINY)
        variants["pytorch_eager"] = Variant(add_one, lambda: x_torch)
    except ImportError:  # PyTorch is optional here
        pass
    timed = interleaved(variants, repeat)
    tiny = {name: timed[name] for name in ("numpy", "pytorch_eager", "jax_eager", "jax_jit")
            if name in timed}
    loops = {name: timed[name]
             for name in ("python_loop_on_device", "python_loop_round_trip", "lax_scan")}
    # Like for like: the addition and the step, each timed both ways.
    like_for_like = {
        "wait_every_call": {"add_one_jit": timed["jax_jit"], "step_jit": timed["step_jit"]},
        "python_loop_never_waits": {"add_one_jit": timed["add_one_loop"],
                                    "step_jit": timed["python_loop_on_device"]},
    }
    scans = {length: timed[f"scan_{length}"] for length in SCAN_LENGTHS}
    # The three loops compute the same losses.
    on_device = np.asarray(jnp.stack(loop_on_device(step_jit, w, steps)[1]))
    assert np.allclose(on_device, loop_with_round_trips(step_jit, w, steps)[1])
    assert np.allclose(on_device, np.asarray(scanned_jit(w)[1]))

    # The least-squares line through the scans' times against their lengths: its slope is
    # what one more step adds, and its value at zero steps what one call costs whatever its
    # length.
    mean_length = statistics.fmean(SCAN_LENGTHS)
    mean_s = statistics.fmean(t.median for t in scans.values())
    scan_step_s = (sum((n - mean_length) * (t.median - mean_s) for n, t in scans.items())
                   / sum((n - mean_length) ** 2 for n in SCAN_LENGTHS))

    per_step = {name: t.median / steps for name, t in loops.items()}
    per_call = {"wait_every_call": 1, "python_loop_never_waits": steps}
    return {
        "tiny_op": {
            "operation": f"x + 1, x of {TINY} float32 numbers",
            "variants": {name: timing_record(t) for name, t in tiny.items()},
        },
        "like_for_like": {
            "calls_per_loop": steps,
            "ways": {way: {name: {**timing_record(t), "per_call_s": t.median / per_call[way]}
                           for name, t in timings.items()}
                     for way, timings in like_for_like.items()},
        },
        "scan_lengths": {
            "lengths": list(SCAN_LENGTHS),
            "variants": {str(length): {**timing_record(t), "per_step_s": t.median / length}
                         for length, t in scans.items()},
            "step_s": max(scan_step_s, 0.0),
            "call_s": max(mean_s - mean_length * scan_step_s, 0.0),
        },
        "loop": {
            "steps": steps,
            "step": f"w - 0.02 * w and sum(w * w), w of {TINY} float32 numbers",
            "variants": {name: {**timing_record(t), "per_step_s": per_step[name]}
                         for name, t in loops.items()},
            "round_trip_per_step_s": max(
                per_step["python_loop_round_trip"] - per_step["python_loop_on_device"], 0.0),
        },
        "compile_s": compile_s,
    }


if __name__ == "__main__":
    print(json.dumps(run()))
