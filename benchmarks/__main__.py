"""``python -m benchmarks [--quick] [--out PATH] [--only NAME ...]``: run and write the JSON."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import SCHEMA_VERSION
from benchmarks.common import load_average, machine_info

BENCHMARKS = ("elementwise", "dispatch", "training", "lm")
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "latest.json"


def run(quick: bool, only: tuple[str, ...] = BENCHMARKS) -> dict[str, Any]:
    """Run the chosen benchmarks; the JSON document, as a dict."""
    from benchmarks import dispatch, elementwise, lm, training

    modules = {"elementwise": elementwise, "dispatch": dispatch, "training": training,
               "lm": lm}
    started = time.perf_counter()
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "load_average_before": load_average(),
        "machine": machine_info(),
        "benchmarks": {},
        "seconds": {},
        # The machine may be shared: what else ran, as the load average after each benchmark.
        "load_average_after_each": {},
    }
    for name in only:
        print(f"[benchmarks] {name} ...", file=sys.stderr, flush=True)
        begin = time.perf_counter()
        document["benchmarks"][name] = modules[name].run(quick=quick)
        document["seconds"][name] = time.perf_counter() - begin
        document["load_average_after_each"][name] = load_average()
    document["seconds"]["total"] = time.perf_counter() - started
    document["load_average_after"] = load_average()
    return document


def summary(document: dict[str, Any]) -> str:
    """A few lines for the terminal: the headline ratios of each benchmark that ran."""
    machine = document["machine"]
    lines = [f"{machine['cpu_model']} | JAX backend {machine['jax_backend']}"
             f" | load average before {document['load_average_before']},"
             f" after {document['load_average_after']}"]
    found = document["benchmarks"]
    if "elementwise" in found:
        s = found["elementwise"]["summary"]
        line = f"elementwise, n={s['largest_n']}: jit {s['jit_speedup_vs_numpy']:.1f}x NumPy"
        if "copy_bandwidth_GBps" in s:
            line += (f"; all-core copy {s['copy_bandwidth_GBps']:.1f} GB/s, jit at "
                     f"{s['jit_fraction_of_copy_bandwidth']:.0%} of it, best rung "
                     f"({s['best_rung']}, computing poly) at "
                     f"{s['best_fraction_of_copy_bandwidth']:.0%} (counting only poly's "
                     f"least bytes: {s['best_least_bytes_fraction_of_copy_bandwidth']:.0%})")
        lines.append(line)
    if "training" in found:
        s = found["training"]["summary"]
        scan = s["scan_time_to_accuracy_speedup_vs_pytorch_preloaded"]
        lines.append(
            "training, time to accuracy over the DataLoader, against eager PyTorch over it: "
            f"JAX, chapter 11's loop (nnx.jit + nnx.Optimizer) "
            f"{s['dataloader_time_to_accuracy_speedup_vs_pytorch']:.2f}x; JAX, functional "
            "step (nnx.split + jax.jit) "
            f"{s['functional_dataloader_time_to_accuracy_speedup_vs_pytorch']:.2f}x")
        lines.append(f"training, time to accuracy: scanned epochs {scan:.1f}x PyTorch over "
                     f"pre-loaded tensors ({s['fastest_pytorch_preloaded']})")
    if "dispatch" in found:
        d = found["dispatch"]
        tiny = {k: v["median_s"] * 1e6 for k, v in d["tiny_op"]["variants"].items()}
        lines.append("tiny op: " + ", ".join(f"{k} {v:.1f} µs" for k, v in tiny.items()))
        lines.append(f"host round trip: {d['loop']['round_trip_per_step_s'] * 1e6:.1f} µs per step")
    if "lm" in found:
        s = found["lm"]["summary"]
        compiled = s["lm_tokens_per_s_speedup_vs_torch_compile"]
        lines.append(
            f"language model: JAX {s['lm_tokens_per_s']['jax']:,.0f} tokens/s, "
            f"{s['lm_tokens_per_s_speedup_vs_pytorch_eager']:.2f}x PyTorch eager, "
            + ("torch.compile not run" if compiled is None else f"{compiled:.2f}x torch.compile")
            + f"; MFU {s['lm_mfu']:.0%} of the float32 matmul peak")
    lines.append(f"total {document['seconds']['total']:.0f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=(
        "Measure where JAX's speed comes from on this machine and write the results as JSON."))
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes and few runs (at most three): checks the code, "
                             "not the machine")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"where to write the JSON (default: {DEFAULT_OUT})")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, default=list(BENCHMARKS),
                        help="run only these benchmarks")
    args = parser.parse_args(argv)
    document = run(args.quick, tuple(args.only))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(summary(document))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
