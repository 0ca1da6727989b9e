"""The benchmark suite's own code: it runs, and it writes JSON the appendix can read.

The suite runs once with ``--quick`` (tiny sizes, a few runs) in a fresh process, as a reader
runs it. Nothing here looks at how fast anything was: timings depend on the machine, so the
checks are about the document's structure (keys, types, non-negative numbers, the device
description), its bookkeeping (ratios and maxima that must follow from the numbers beside
them), and facts that do not depend on speed: what XLA compiled, whether a donated buffer was
reused, whether every trainer started from the same weights, whether every rung of the ladder
computes the function it is named after.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tools.notebooks import read_pins

ROOT = Path(__file__).resolve().parent.parent
LATEST = ROOT / "benchmarks" / "results" / "latest.json"
APPENDIX = ROOT / "book" / "appendix_performance.ipynb"
TRAINERS = ("pytorch_dataloader", "jax_nnx_dataloader", "jax_functional_dataloader",
            "pytorch_preloaded", "pytorch_preloaded_default_threads", "pytorch_compiled",
            "jax_scan")
# Over the same DataLoader: eager PyTorch, chapter 11's loop, and its functional step.
DATALOADER = ("pytorch_dataloader", "jax_nnx_dataloader", "jax_functional_dataloader")
EAGER_PYTORCH = ("pytorch_dataloader", "pytorch_preloaded", "pytorch_preloaded_default_threads")
PRELOADED = ("pytorch_preloaded", "pytorch_preloaded_default_threads", "pytorch_compiled",
             "jax_scan")
SCHEMA_VERSION = 4  # the layout this test and the appendix know; bump all three together
SIZE_VARIANTS = {"numpy", "jax_eager", "jax_jit", "copy_numpy_1_thread", "copy_numpy_all_cores",
                 "copy_jax_all_cores"}
KERNELS = {"copy_numpy_1_thread", "copy_numpy_all_cores", "triad_numpy_1_thread",
           "triad_numpy_all_cores", "copy_jax_all_cores", "triad_jax_all_cores",
           "update_numpy_1_thread", "update_numpy_all_cores", "update_jax_all_cores"}
LADDER_START = ["numpy", "jax_eager", "jax_jit"]
PROFILE_KEYS = {"page_faults_per_call", "cpu_user_s_per_call", "cpu_system_s_per_call"}
TIMING_KEYS = {"median_s", "spread_s", "runs_s", "calls_per_run"}
ALL_BENCHMARKS = ("elementwise", "dispatch", "training", "lm")
LM_TRAINERS = ("jax", "pytorch_eager", "pytorch_compiled")
LM_VARIANTS = ("jax_bf16", "jax_unrolled", "jax_huge_pages", "jax_small_batch")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """The JSON document of ``python -m benchmarks --quick``, and what it printed."""
    out = tmp_path_factory.mktemp("benchmarks") / "quick.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text(encoding="utf-8")), done.stdout


def _non_negative_numbers(node: Any, where: str = "$") -> None:
    """Every number in the document is finite and non-negative (booleans aside)."""
    if isinstance(node, dict):
        for key, value in node.items():
            _non_negative_numbers(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _non_negative_numbers(value, f"{where}[{i}]")
    elif isinstance(node, int | float) and not isinstance(node, bool):
        assert math.isfinite(node) and node >= 0, f"{where} = {node!r}"


def _timings(node: Any) -> list[dict[str, Any]]:
    """Every timing record (a dict with ``median_s``) anywhere in the document."""
    if isinstance(node, dict):
        found = [node] if "median_s" in node else []
        return found + [t for value in node.values() for t in _timings(value)]
    if isinstance(node, list):
        return [t for value in node for t in _timings(value)]
    return []


def _check_timing(record: dict[str, Any]) -> None:
    assert TIMING_KEYS <= set(record), f"timing record without {TIMING_KEYS - set(record)}"
    runs = record["runs_s"]
    assert isinstance(runs, list) and runs and all(isinstance(r, float) for r in runs)
    assert isinstance(record["calls_per_run"], int) and record["calls_per_run"] >= 1
    # The median is one of the runs' values or between two of them: a check of the
    # bookkeeping, not of any speed.
    assert min(runs) <= record["median_s"] <= max(runs)


def check_document(document: dict[str, Any], benchmarks: tuple[str, ...]) -> None:
    """The structure the appendix "Performance, measured" relies on."""
    assert document["schema_version"] == SCHEMA_VERSION, (
        f"a document of schema version {document['schema_version']}, but the suite now writes "
        f"version {SCHEMA_VERSION} (chapter 11's loop as its own trainer, every rung of the "
        "ladder computing poly): run `python -m benchmarks` again")
    datetime.fromisoformat(document["created_utc"])
    assert isinstance(document["quick"], bool)
    _non_negative_numbers(document)

    machine = document["machine"]
    assert isinstance(machine["platform"], str) and isinstance(machine["cpu_model"], str)
    assert isinstance(machine["cpu_count"], int) and machine["cpu_count"] >= 1
    assert isinstance(machine["jax_backend"], str) and machine["jax_backend"]
    assert machine["jax_devices"], "no JAX device described"
    for device in machine["jax_devices"]:
        assert {"id", "platform", "device_kind"} <= set(device)
    assert machine["transparent_huge_pages"] in {None, "always", "madvise", "never"}
    for package in ("python", "jax", "jaxlib", "flax", "optax", "torch", "numpy"):
        assert package in machine["versions"]
    assert isinstance(machine["versions"]["jax"], str)

    assert set(document["benchmarks"]) == set(benchmarks)
    assert set(document["seconds"]) == {*benchmarks, "total"}
    for record in _timings(document):
        _check_timing(record)

    if "elementwise" in benchmarks:
        _check_elementwise(document["benchmarks"]["elementwise"], machine)
    if "training" in benchmarks:
        _check_training(document["benchmarks"]["training"])
    if "lm" in benchmarks:
        _check_lm(document["benchmarks"]["lm"], machine, quick=document["quick"])
    if "dispatch" in benchmarks:
        dispatch = document["benchmarks"]["dispatch"]
        assert {"numpy", "jax_eager", "jax_jit"} <= set(dispatch["tiny_op"]["variants"])
        loop = dispatch["loop"]
        assert set(loop["variants"]) == {
            "python_loop_on_device", "python_loop_round_trip", "lax_scan"}
        assert isinstance(loop["steps"], int) and loop["steps"] >= 1
        ways = dispatch["like_for_like"]["ways"]
        assert set(ways) == {"wait_every_call", "python_loop_never_waits"}
        assert all(set(way) == {"add_one_jit", "step_jit"} for way in ways.values())
        scans = dispatch["scan_lengths"]
        assert list(scans["variants"]) == [str(n) for n in scans["lengths"]]
        assert {"step_s", "call_s"} <= set(scans)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9)


def _check_elementwise(elementwise: dict[str, Any], machine: dict[str, Any]) -> None:
    assert [r["n"] for r in elementwise["results"]] == elementwise["sizes"]
    for result in elementwise["results"]:
        assert set(result["variants"]) == SIZE_VARIANTS
        assert result["bytes_moved"] == 2 * result["n"] ** 2 * 4
        for v in result["variants"].values():
            assert PROFILE_KEYS <= set(v)
            assert _close(v["bandwidth_GBps"], result["bytes_moved"] / v["median_s"] / 1e9)
        assert set(result["one_off_s"]) == {"jax_jit_compile_s", "jax_eager_first_call_s"}
        assert all(isinstance(p, int) for p in result["jax_jit_loop_partitions"])
    for probe in ("allocator_keeps_memory", "one_core"):  # None where not measurable
        if elementwise[probe] is not None:
            probed = elementwise[probe]["results"]
            assert [r["n"] for r in probed] == elementwise["sizes"]
            assert all(set(r["variants"]) == {"numpy", "jax_jit"} for r in probed)
    summary = elementwise["summary"]
    assert summary["largest_n"] == elementwise["sizes"][-1]
    assert {"jit_speedup_vs_numpy"} <= set(summary)
    if machine["jax_backend"] != "cpu":
        assert elementwise["ladder"] is None and elementwise["memory_bandwidth"] is None
        return

    memory, ladder = elementwise["memory_bandwidth"], elementwise["ladder"]
    n = summary["largest_n"]
    assert memory["n"] == ladder["n"] == n and memory["array_bytes"] == 4 * n * n
    assert memory["threads"] >= 1
    assert KERNELS <= set(memory["kernels"])
    for name, kernel in memory["kernels"].items():
        arrays = 3 if name.startswith("triad") else 2  # STREAM's count
        assert _close(kernel["bandwidth_GBps"],
                      arrays * memory["array_bytes"] / kernel["median_s"] / 1e9), name
    # Each limit is the fastest all-core kernel of its kind, whichever library ran it.
    for kind in ("copy", "triad", "update"):
        found = {k: v["bandwidth_GBps"] for k, v in memory["kernels"].items()
                 if k.startswith(kind) and "all_cores" in k}
        assert memory[f"{kind}_source"] == max(found, key=found.get)
        assert _close(memory[f"{kind}_GBps"], max(found.values()))
    assert _close(memory["copy_1_thread_GBps"],
                  memory["kernels"]["copy_numpy_1_thread"]["bandwidth_GBps"])

    variants = ladder["variants"]
    rungs = [rung["name"] for rung in ladder["rungs"]]
    assert rungs[:3] == LADDER_START and set(rungs) <= set(variants)
    assert all(rung["change"] for rung in ladder["rungs"])
    # Every rung computes poly: its result, checked against poly(x) when the suite ran. The
    # function without the transpose is another function (x is not symmetric), never a rung.
    assert all(variants[name]["equals_poly"] is True for name in rungs), rungs
    for name, v in variants.items():
        if "without_transpose" in name:
            assert v["equals_poly"] is False and name not in rungs, name
            assert v["function"].startswith("a different function"), name
    assert ladder["bytes_moved"] == 2 * memory["array_bytes"]  # poly's least traffic
    for name, v in variants.items():
        assert PROFILE_KEYS <= set(v), name
        # Each variant's own bytes: x.T stored as a second input is one more array read.
        arrays = 3 if "stored_transpose" in name else 2
        assert v["bytes_moved"] == arrays * memory["array_bytes"], name
        assert _close(v["bandwidth_GBps"], v["bytes_moved"] / v["median_s"] / 1e9)
        assert _close(v["fraction_of_copy_bandwidth"], v["bandwidth_GBps"] / memory["copy_GBps"])
        assert _close(v["least_bytes_fraction_of_copy_bandwidth"],
                      ladder["bytes_moved"] / v["median_s"] / 1e9 / memory["copy_GBps"])
    # Facts of the compiled programs, not of speed: with the transpose, XLA cannot write the
    # result into the donated input while still reading it, so it computes elsewhere and
    # copies; without it, the result goes straight into the donated buffer, no fresh pages.
    # With x.T stored, each element of the result depends on the same element of x and of
    # xt alone: the result goes straight into the donated x, no fresh pages; and XLA's count
    # of bytes is the three arrays the variant is credited with.
    for suffix in ("", "_huge_pages") if ladder["huge_pages_environment"] else ("",):
        assert variants[f"jax_jit_donated{suffix}"]["copy_after_loop"] is True
        for name in ("jax_jit_without_transpose_donated", "jax_jit_stored_transpose_donated"):
            donated = variants[name + suffix]
            assert donated["copy_after_loop"] is False, name
            if donated["page_faults_per_call"] is not None:
                assert donated["page_faults_per_call"] == 0, name
        for name in ("jax_jit", "jax_jit_stored_transpose", "jax_jit_stored_transpose_donated"):
            assert variants[name + suffix]["hlo_bytes_accessed"] == (
                variants[name + suffix]["bytes_moved"]), name
    # The best rung, among the rungs alone, all of which compute poly.
    best = max(rungs, key=lambda name: variants[name]["fraction_of_copy_bandwidth"])
    assert summary["best_rung"] == best
    assert _close(summary["best_fraction_of_copy_bandwidth"],
                  variants[best]["fraction_of_copy_bandwidth"])
    assert _close(summary["best_least_bytes_fraction_of_copy_bandwidth"],
                  variants[best]["least_bytes_fraction_of_copy_bandwidth"])
    assert _close(summary["jit_fraction_of_copy_bandwidth"],
                  variants["jax_jit"]["fraction_of_copy_bandwidth"])
    assert _close(summary["jit_speedup_vs_numpy"],
                  variants["numpy"]["median_s"] / variants["jax_jit"]["median_s"])
    assert _close(summary["copy_bandwidth_GBps"], memory["copy_GBps"])


def _check_training(training: dict[str, Any]) -> None:
    assert set(training["trainers"]) == set(TRAINERS)
    working = {}
    for name, trainer in training["trainers"].items():
        assert trainer["trainer"] == name
        if "error" in trainer:  # torch.compile may not run everywhere; nothing else may fail
            assert name == "pytorch_compiled" and isinstance(trainer["error"], str)
            continue
        working[name] = trainer
        assert isinstance(trainer["reached_target"], bool)
        assert isinstance(trainer["epochs_to_target"], int) and trainer["epochs_to_target"] >= 1
        assert 0 <= trainer["final_test_accuracy"] <= 1
        assert trainer["steps"] == (
            trainer["epochs_to_target"] * training["setup"]["steps_per_epoch"])
        assert isinstance(trainer["compile_s"], dict)
        assert (trainer["compile_s"] == {}) == (name in EAGER_PYTORCH)
        breakdown = trainer["epoch_breakdown"]
        assert (breakdown is not None) == (name in DATALOADER[1:])
        if breakdown is not None:
            assert set(breakdown) == {"epoch", "loader_only", "steps_only",
                                      "steps_only_numpy_batches"}
        memory = trainer["memory"]
        assert {"peak_rss_bytes", "rss_at_start_bytes", "rss_after_setup_bytes",
                "device_peak_bytes"} <= set(memory)
        if memory["peak_rss_bytes"] is not None:
            assert memory["peak_rss_bytes"] >= memory["rss_after_setup_bytes"] > 0
    assert {*DATALOADER, "jax_scan"} <= set(working)
    summary = training["summary"]
    missing = {
        "dataloader_time_to_accuracy_speedup_vs_pytorch", "dataloader_epoch_speedup_vs_pytorch",
        "functional_dataloader_time_to_accuracy_speedup_vs_pytorch",
        "functional_dataloader_epoch_speedup_vs_pytorch",
        "functional_epoch_speedup_vs_nnx_dataloader",
        "scan_epoch_speedup_vs_functional_dataloader", "scan_time_to_accuracy_speedup_vs_pytorch",
        "scan_time_to_accuracy_speedup_vs_pytorch_preloaded",
        "scan_time_to_accuracy_speedup_vs_pytorch_compiled"} - set(summary)
    assert not missing, f"training summary without {sorted(missing)}"
    tta = {name: t["time_to_accuracy"]["median_s"] for name, t in working.items()}
    epoch = {name: t["epoch"]["median_s"] for name, t in working.items()}
    # The headline pair over the DataLoader is chapter 11's loop against eager PyTorch; the
    # functional step has keys of its own.
    assert _close(summary["dataloader_time_to_accuracy_speedup_vs_pytorch"],
                  tta["pytorch_dataloader"] / tta["jax_nnx_dataloader"])
    assert _close(summary["dataloader_epoch_speedup_vs_pytorch"],
                  epoch["pytorch_dataloader"] / epoch["jax_nnx_dataloader"])
    assert _close(summary["functional_dataloader_time_to_accuracy_speedup_vs_pytorch"],
                  tta["pytorch_dataloader"] / tta["jax_functional_dataloader"])
    assert _close(summary["functional_epoch_speedup_vs_nnx_dataloader"],
                  epoch["jax_nnx_dataloader"] / epoch["jax_functional_dataloader"])
    assert _close(summary["scan_epoch_speedup_vs_functional_dataloader"],
                  epoch["jax_functional_dataloader"] / epoch["jax_scan"])
    preloaded = [name for name in PRELOADED[:-1] if name in working]
    assert summary["fastest_pytorch_preloaded"] == min(preloaded, key=tta.get)
    assert _close(summary["scan_time_to_accuracy_speedup_vs_pytorch_preloaded"],
                  tta[summary["fastest_pytorch_preloaded"]] / tta["jax_scan"])
    assert (summary["scan_time_to_accuracy_speedup_vs_pytorch_compiled"] is None) == (
        "pytorch_compiled" not in working)


def _check_lm(lm: dict[str, Any], machine: dict[str, Any], quick: bool) -> None:
    setup, config = lm["setup"], lm["setup"]["config"]
    trainers = lm["trainers"]
    assert set(trainers) == {*LM_TRAINERS, *LM_VARIANTS}
    ran = {}
    for name, trainer in trainers.items():
        assert trainer["trainer"] == name
        if "skipped" in trainer:  # a quick run skips torch.compile and the variants
            assert quick and name not in ("jax", "pytorch_eager"), name
            assert setup["skipped"][name] == trainer["skipped"]
            continue
        if "error" in trainer:  # torch.compile may not run everywhere; nothing else may fail
            assert name == "pytorch_compiled" and isinstance(trainer["error"], str)
            continue
        ran[name] = trainer
    assert {"jax", "pytorch_eager"} <= set(ran)
    if not quick:
        assert not setup["skipped"] and set(LM_VARIANTS) <= set(ran)
    # The arithmetic per token, from the configuration: 6 per weight of the matrix products
    # (qkv, out, up, down in each layer, and the head) plus attention's 12 L T d.
    d, layers, context = config["d_model"], config["layers"], config["context"]
    hidden = config["mlp_ratio"] * d
    weights = layers * (4 * d * d + 2 * d * hidden) + d * config["vocab_size"]
    flops = lm["flops_per_token"]
    assert flops["matmul_weights"] == weights
    assert flops["total"] == 6 * weights + 12 * layers * context * d
    peak = lm["matmul_peak"]
    assert peak["flops_per_call"] == 2 * peak["n"] ** 3
    for dtype, found in peak["variants"].items():
        assert _close(found["GFLOPs"], peak["flops_per_call"] / found["median_s"] / 1e9)
        assert found["hlo_flops"] == peak["flops_per_call"], dtype  # XLA's count agrees
        assert _close(found["best_GFLOPs"],
                      peak["flops_per_call"] / min(found["runs_s"]) / 1e9)
    for name, trainer in ran.items():
        batch = setup["batch_size"] // 4 if name == "jax_small_batch" else setup["batch_size"]
        assert trainer["tokens_per_step"] == batch * context, name
        assert _close(trainer["tokens_per_s"],
                      trainer["tokens_per_step"] / trainer["step"]["median_s"])
        used = peak["variants"][trainer["peak_used"]]["GFLOPs"] * 1e9
        assert _close(trainer["mfu"], flops["total"] * trainer["tokens_per_s"] / used)
        best = trainer["tokens_per_step"] / min(trainer["step"]["runs_s"])
        assert _close(trainer["best_tokens_per_s"], best)
        best_peak = peak["variants"][trainer["peak_used"]]["best_GFLOPs"] * 1e9
        assert _close(trainer["best_mfu"], flops["total"] * best / best_peak)
        assert (trainer["peak_used"] == "bfloat16") == (name == "jax_bf16")
        assert trainer["threads"] == machine["cpu_count"], name  # both libraries, all cores
        assert {"first_step", "second_step"} <= set(trainer["compile_s"])
        if name.startswith("jax"):
            assert {"trace_and_lower", "compile"} <= set(trainer["compile_s"])
        assert len(trainer["losses"]) == setup["check_steps"]
        # From small initial weights the first loss is close to a uniform guess's, ln V.
        assert abs(trainer["losses"][0] - math.log(config["vocab_size"])) < 0.1, name
    # The ports: the same loss at the first step (the same weights and batch), and close
    # losses after every step of the check (the same optimizer and schedule).
    check = lm["check"]
    for name, difference in check["first_step_abs_difference_vs_jax"].items():
        assert _close(difference, abs(ran[name]["losses"][0] - ran["jax"]["losses"][0]))
        # The same batches for all but the quarter batch, which trains on part of each.
        if ran[name]["compute_dtype"] == "float32" and name != "jax_small_batch":
            assert difference < 1e-5, (name, difference)
            assert check["max_abs_difference_vs_jax"][name] < 1e-3, name
    assert set(check["first_step_abs_difference_vs_jax"]) == set(ran) - {"jax"}
    # XLA's cost analysis counts nnx.scan's loop body once: one layer's count, roughly
    # (plus the elementwise work and the optimizer); unrolled, the whole count.
    assert ran["jax"]["hlo"]["while_loops"] >= 1
    assert 0.95 < check["hlo_flops_per_token_vs_one_layer_count"] < 1.3, check
    if "jax_unrolled" in ran:
        assert ran["jax_unrolled"]["hlo"]["while_loops"] == 0
        assert 0.95 < check["unrolled_hlo_flops_per_token_vs_count"] < 1.3, check
    summary, rate = lm["summary"], {n: t["tokens_per_s"] for n, t in ran.items()}
    assert summary["lm_tokens_per_s"] == rate
    assert _close(summary["lm_tokens_per_s_speedup_vs_pytorch_eager"],
                  rate["jax"] / rate["pytorch_eager"])
    if "pytorch_compiled" in ran:
        assert _close(summary["lm_tokens_per_s_speedup_vs_torch_compile"],
                      rate["jax"] / rate["pytorch_compiled"])
    else:
        assert summary["lm_tokens_per_s_speedup_vs_torch_compile"] is None
    assert _close(summary["lm_mfu"], ran["jax"]["mfu"])
    float32_jax = [n for n in ("jax", *LM_VARIANTS) if n in ran and n != "jax_bf16"]
    assert summary["lm_fastest_float32_jax"] == max(float32_jax, key=rate.get)


def test_quick_run_writes_a_valid_document(quick_run):
    document, printed = quick_run
    assert document["quick"] is True
    check_document(document, ALL_BENCHMARKS)
    assert "wrote " in printed  # the summary for the terminal, then where the JSON went


def test_committed_results_are_a_full_valid_run():
    # The appendix renders this file; it must come from a full run, not a smoke test.
    document = json.loads(LATEST.read_text(encoding="utf-8"))
    check_document(document, ALL_BENCHMARKS)
    assert document["quick"] is False
    trainers = document["benchmarks"]["training"]["trainers"]
    assert all(t["reached_target"] for t in trainers.values() if "error" not in t)
    # The same initial weights and the same batches in each pair: the same number of epochs.
    for pair in (DATALOADER, PRELOADED):
        epochs = {trainers[n]["epochs_to_target"] for n in pair if "error" not in trainers[n]}
        assert len(epochs) == 1, (pair, epochs)
    ladder = document["benchmarks"]["elementwise"]["ladder"]
    if ladder is not None and ladder["huge_pages_environment"]:
        # The setting took effect: a 2 MiB page per fault instead of 4 KiB (a 64 MB result
        # takes about 15,600 faults on 4 KiB pages, a few hundred on huge pages).
        faults = {k: v["page_faults_per_call"] for k, v in ladder["variants"].items()}
        assert faults["jax_jit_huge_pages"] < faults["jax_jit"] / 10, faults


def test_committed_results_were_measured_on_the_pinned_stack():
    # The appendix presents these numbers as the book's: after raising a pin, run
    # `python -m benchmarks` again so that the page describes the versions it names.
    versions = json.loads(LATEST.read_text(encoding="utf-8"))["machine"]["versions"]
    pins = read_pins(ROOT / "requirements.txt")
    measured = {name: versions[name].split("+")[0] for name in ("jax", "flax", "optax", "torch")}
    assert measured == {name: pins[name] for name in measured}, (
        f"benchmarks/results/latest.json was measured with {measured}; requirements.txt pins "
        "other versions: run `python -m benchmarks` again"
    )
    assert versions["python"].rsplit(".", 1)[0] == (ROOT / ".python-version").read_text().strip()


def test_chapter_loop_and_functional_step_train_alike():
    # The two JAX trainers over the DataLoader differ in how the model reaches the compiled
    # step, not in what the step computes: from the same weights, over the same batches, one
    # epoch each ends with the same parameters and the same step count.
    from flax import nnx

    from benchmarks import training

    chapter = training.build("jax_nnx_dataloader")
    functional = training.build("jax_functional_dataloader")
    for trainer in (chapter, functional):
        trainer.fresh()
        trainer.epoch(0)
        trainer.wait()
    ours = nnx.to_pure_dict(nnx.state(chapter.model, nnx.Param))
    theirs = nnx.to_pure_dict(functional.state[0])
    for layer in ("hidden", "output"):
        for name in ("kernel", "bias"):
            assert np.allclose(ours[layer][name], theirs[layer][name], rtol=1e-5, atol=1e-6)
    assert int(chapter.optimizer.step[...]) == training.STEPS_PER_EPOCH
    assert int(functional.state[1][0].count) == training.STEPS_PER_EPOCH
    assert chapter.accuracy() == functional.accuracy()
    # fresh() puts the initial weights back: both start the next run where they began.
    chapter.fresh()
    start = nnx.to_pure_dict(nnx.state(chapter.model, nnx.Param))
    first = training.initial_parameters()
    assert all(np.array_equal(start[layer][name], first[layer][name])
               for layer in first for name in first[layer])
    assert int(chapter.optimizer.step[...]) == 0


def test_only_runs_the_named_benchmark(tmp_path: Path):
    out = tmp_path / "dispatch.json"
    subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--only", "dispatch",
                    "--out", str(out)], cwd=ROOT, check=True, capture_output=True, timeout=120)
    check_document(json.loads(out.read_text(encoding="utf-8")), ("dispatch",))


def test_appendix_text_describes_the_committed_results():
    # The appendix checks its statements only against the run its text was written for,
    # BOOK_RUN: a reader's own run skips those checks. Here BOOK_RUN must be the committed
    # run, so the checks always run in the tests, and re-running the suite means re-reading
    # the page (then set BOOK_RUN to the new run's created_utc).
    notebook = json.loads(APPENDIX.read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    found = [m for source in sources
             for m in re.findall(r'^BOOK_RUN = "([^"]+)"', source, flags=re.MULTILINE)]
    assert len(found) == 1, f"expected one BOOK_RUN = \"...\" line in {APPENDIX.name}"
    created = json.loads(LATEST.read_text(encoding="utf-8"))["created_utc"]
    assert found[0] == created, (
        f"{APPENDIX.name} describes the run of {found[0]}, but benchmarks/results/latest.json "
        f"is the run of {created}: read the page against the new results, then update BOOK_RUN"
    )
