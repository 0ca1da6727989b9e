"""The book's XOR classifier trained to the same test accuracy three ways, plus one extra row.

- ``pytorch``: the loop a PyTorch user writes: ``nn.Sequential``, ``BCEWithLogitsLoss``,
  ``torch.optim.Adam`` and a ``DataLoader`` with its default collate function, run eagerly
  with PyTorch's default number of threads;
- ``pytorch_1_thread``: the same loop after ``torch.set_num_threads(1)``, an extra row: for
  operations this small, PyTorch's threads only add synchronization, and when other programs
  compete for the cores they can make it many times slower;
- ``jax_dataloader``: a jitted training step of the book's Flax NNX ``MLPClassifier``, fed by
  the same ``DataLoader`` with ``helpers.numpy_collate``;
- ``jax_scan``: chapter 11's whole epoch compiled with ``lax.scan`` over data that stays on
  the device; only a small array of shuffled indices travels per epoch.

Both JAX trainers use NNX's functional form, the fastest way to drive a small model: the
model is taken apart once with ``nnx.split`` into its graphdef (the structure, a constant)
and its parameters (an ``nnx.State`` of arrays), and the step is a pure function of
``(params, opt_state)`` and a batch, compiled by ``jax.jit``, that rebuilds the model with
``nnx.merge`` only while it is traced and updates with Optax directly. A step written with
``nnx.jit`` and ``nnx.Optimizer`` takes the model and the optimizer objects instead, and
``nnx.jit`` walks their object graph in Python at every call to carry in-place changes in
and out; for a network this small that per-call traversal costs more than the compiled step
itself (Flax's guide "Performance considerations" names the functional loop as the way to
avoid it). The scanned epoch needs the pure step anyway, since ``lax.scan`` carries plain
pytrees; the book's chapter 11 scans the same kind of step for its compiled epoch.

All of them use the same data (``helpers.XORDataset``), the same network (2 -> 8 tanh -> 1), the
same batch size, Adam with the same learning rate, and drop the last incomplete batch, so an
epoch is the same number of steps everywhere. Each trains epoch by epoch until the test
accuracy reaches ``TARGET_ACCURACY`` (or ``max_epochs`` pass).

Every trainer runs in a fresh Python process (``python -m benchmarks.training --trainer NAME``),
so that the peak memory it reports is its own, with only the libraries it needs imported: the
PyTorch trainer's process imports JAX only after its peak memory is read (for
``helpers.timeit``), and the scanned trainer's never imports PyTorch. That is why this module
imports ``helpers`` (whose ``__init__`` imports JAX) only inside functions.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import device_peak_bytes, peak_rss_bytes, seconds, timing_record

TRAINERS = ("pytorch", "pytorch_1_thread", "jax_dataloader", "jax_scan")
SEED = 0
TRAIN_SIZE, TEST_SIZE = 2500, 500
BATCH_SIZE = 128
LEARNING_RATE = 1e-2
HIDDEN = 8
TARGET_ACCURACY = 0.99
STEPS_PER_EPOCH = TRAIN_SIZE // BATCH_SIZE  # drop_last=True everywhere


def _xor_dataset_class() -> type:
    """``helpers.XORDataset``, without importing the ``helpers`` package where it is not loaded.

    ``helpers/__init__.py`` imports JAX, but ``helpers/data.py`` needs only NumPy: loading that
    file alone keeps JAX out of the PyTorch trainer's process, and out of its peak memory.
    """
    if "helpers" in sys.modules:
        return sys.modules["helpers"].XORDataset
    package = importlib.util.find_spec("helpers")  # finds the package without running it
    path = Path(package.submodule_search_locations[0]) / "data.py"
    spec = importlib.util.spec_from_file_location("benchmarks._helpers_data", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.XORDataset


def datasets() -> tuple[Any, Any]:
    """The training and test sets: the same seeds, hence the same points, for every trainer."""
    xor_dataset = _xor_dataset_class()
    return (xor_dataset(TRAIN_SIZE, seed=SEED, noise=0.1),
            xor_dataset(TEST_SIZE, seed=SEED + 1, noise=0.1))


class Trainer:
    """One way of training: ``fresh()`` starts a run, ``epoch(k)`` trains, ``accuracy()`` tests."""

    def fresh(self) -> None:
        raise NotImplementedError

    def epoch(self, k: int) -> None:
        raise NotImplementedError

    def accuracy(self) -> float:
        raise NotImplementedError

    def wait(self) -> None:
        """Block until every queued computation is done (JAX dispatches asynchronously)."""

    def compile_seconds(self) -> dict[str, float]:
        """Seconds spent tracing and compiling, measured apart (empty for eager PyTorch)."""
        return {}


class PyTorchTrainer(Trainer):
    """Idiomatic eager PyTorch, as its tutorials teach it."""

    def __init__(self, threads: int | None = None) -> None:
        import torch
        from torch import nn
        from torch.utils.data import DataLoader

        if threads is not None:
            torch.set_num_threads(threads)
        self.threads = torch.get_num_threads()
        self.torch, self.nn = torch, nn
        train_set, test_set = datasets()
        self.generator = torch.Generator()
        self.loader = DataLoader(train_set, batch_size=BATCH_SIZE, shuffle=True, drop_last=True,
                                 generator=self.generator)
        self.test_x = torch.from_numpy(test_set.data)
        self.test_y = torch.from_numpy(test_set.labels)
        self.loss_fn = nn.BCEWithLogitsLoss()

    def fresh(self) -> None:
        torch, nn = self.torch, self.nn
        torch.manual_seed(SEED)
        self.generator.manual_seed(SEED)
        self.model = nn.Sequential(nn.Linear(2, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1))
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=LEARNING_RATE)

    def epoch(self, k: int) -> None:
        self.model.train()
        for x, y in self.loader:
            self.optimizer.zero_grad()
            loss = self.loss_fn(self.model(x).squeeze(1), y.float())
            loss.backward()
            self.optimizer.step()

    def accuracy(self) -> float:
        self.model.eval()
        with self.torch.no_grad():
            predicted = self.model(self.test_x).squeeze(1) > 0
            return (predicted == self.test_y.bool()).float().mean().item()


class _JaxTrainer(Trainer):
    """What both JAX trainers share: the NNX model split once, the pure jitted step."""

    def __init__(self) -> None:
        import jax
        import jax.numpy as jnp
        import optax
        from flax import nnx

        from helpers.models import MLPClassifier  # imports helpers, and with it JAX: fine here

        self.jax, self.jnp = jax, jnp
        self.train_set, self.test_set = datasets()
        self.tx = optax.adam(LEARNING_RATE)
        # The structure of the model, split off once; a constant of every traced function.
        graphdef, _ = nnx.split(MLPClassifier(hidden=HIDDEN, rngs=nnx.Rngs(SEED)))

        def create(seed):
            """A fresh training state: the parameters and Adam's state, as one pytree."""
            _, params = nnx.split(MLPClassifier(hidden=HIDDEN, rngs=nnx.Rngs(seed)))
            return params, self.tx.init(params)

        def logits_of(params, x):
            return nnx.merge(graphdef, params)(x)  # runs while tracing, not per call

        def loss_fn(params, batch):
            x, y = batch
            return optax.sigmoid_binary_cross_entropy(logits_of(params, x), y).mean()

        def train_step(state, batch):
            params, opt_state = state
            loss, grads = jax.value_and_grad(loss_fn)(params, batch)
            updates, opt_state = self.tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), loss

        def test_accuracy(params, x, y):
            return jnp.mean((logits_of(params, x) > 0) == y)

        self.create = create
        self.train_step_fn = train_step
        self.train_step = jax.jit(train_step)
        self.test_accuracy_fn = test_accuracy
        self.test_accuracy = jax.jit(test_accuracy)
        self.test_x = jax.device_put(self.test_set.data)
        self.test_y = jax.device_put(self.test_set.labels)

    def fresh(self) -> None:
        self.state = self.create(SEED)

    def accuracy(self) -> float:
        params, _ = self.state
        return float(self.test_accuracy(params, self.test_x, self.test_y))

    def wait(self) -> None:
        self.jax.block_until_ready(self.state)

    def _batch_example(self):
        return (self.train_set.data[:BATCH_SIZE], self.train_set.labels[:BATCH_SIZE])

    def _compile_test_accuracy_seconds(self, state) -> float:
        params, _ = state
        return seconds(lambda: self.jax.jit(self.test_accuracy_fn).lower(
            params, self.test_x, self.test_y).compile())

    def compile_seconds(self) -> dict[str, float]:
        state = self.create(SEED)
        return {
            "train_step": seconds(lambda: self.jax.jit(self.train_step_fn).lower(
                state, self._batch_example()).compile()),
            "test_accuracy": self._compile_test_accuracy_seconds(state),
        }


class JaxDataLoaderTrainer(_JaxTrainer):
    """A jitted step per batch, batches from PyTorch's ``DataLoader`` as NumPy arrays."""

    def __init__(self) -> None:
        super().__init__()
        import torch
        from torch.utils.data import DataLoader

        import helpers

        self.generator = torch.Generator()
        self.loader = DataLoader(self.train_set, batch_size=BATCH_SIZE, shuffle=True,
                                 drop_last=True, collate_fn=helpers.numpy_collate,
                                 generator=self.generator)

    def fresh(self) -> None:
        super().fresh()
        self.generator.manual_seed(SEED)

    def epoch(self, k: int) -> None:
        for batch in self.loader:
            self.state, _ = self.train_step(self.state, batch)

    def breakdown(self, repeat: int) -> dict[str, Any]:
        """Where an epoch's time goes: the loader alone, and the steps alone.

        ``loader_only`` iterates the loader without training. ``steps_only`` runs the same
        Python loop of jitted steps over batches already cut and placed on the device, so that
        only the per-step dispatch and the steps themselves remain. ``steps_only_numpy_batches``
        runs it over the same batches kept as NumPy arrays, as the loader yields them: each
        call then also copies its batch to the device, and the difference is that copy.
        """
        import helpers

        jax = self.jax

        def loader_only() -> None:
            for _ in self.loader:
                pass

        numpy_batches = list(self.loader)
        device_batches = [jax.device_put(batch) for batch in numpy_batches]

        def steps_over(batches) -> None:
            state = self.state
            for batch in batches:
                state, _ = self.train_step(state, batch)
            jax.block_until_ready(state)

        return {
            "loader_only": timing_record(helpers.timeit(loader_only, repeat=repeat)),
            "steps_only": timing_record(helpers.timeit(steps_over, device_batches,
                                                       repeat=repeat)),
            "steps_only_numpy_batches": timing_record(helpers.timeit(steps_over, numpy_batches,
                                                                     repeat=repeat)),
        }


class JaxScanTrainer(_JaxTrainer):
    """A whole epoch as one compiled call: ``lax.scan`` over batches of device-resident data."""

    def __init__(self) -> None:
        super().__init__()
        jax, jnp = self.jax, self.jnp
        train_step = self.train_step_fn

        def train_epoch(state, x, y, order):
            used = order[: STEPS_PER_EPOCH * BATCH_SIZE]
            xs = x[used].reshape(STEPS_PER_EPOCH, BATCH_SIZE, 2)
            ys = y[used].reshape(STEPS_PER_EPOCH, BATCH_SIZE)
            state, losses = jax.lax.scan(train_step, state, (xs, ys))
            return state, jnp.mean(losses)

        self.train_epoch_fn = train_epoch
        self.train_epoch = jax.jit(train_epoch)
        self.train_x = jax.device_put(self.train_set.data)
        self.train_y = jax.device_put(self.train_set.labels)

    def _order(self, k: int) -> np.ndarray:
        return np.random.default_rng(SEED + k).permutation(TRAIN_SIZE)  # seeded per epoch

    def epoch(self, k: int) -> None:
        self.state, _ = self.train_epoch(self.state, self.train_x, self.train_y, self._order(k))

    def compile_seconds(self) -> dict[str, float]:
        # The scanned epoch contains the step, which is never compiled on its own here.
        state = self.create(SEED)
        return {
            "train_epoch": seconds(lambda: self.jax.jit(self.train_epoch_fn).lower(
                state, self.train_x, self.train_y, self._order(0)).compile()),
            "test_accuracy": self._compile_test_accuracy_seconds(state),
        }


def build(name: str) -> Trainer:
    if name == "pytorch_1_thread":
        return PyTorchTrainer(threads=1)
    return {"pytorch": PyTorchTrainer, "jax_dataloader": JaxDataLoaderTrainer,
            "jax_scan": JaxScanTrainer}[name]()


def train_to_accuracy(trainer: Trainer, max_epochs: int) -> dict[str, Any]:
    """One run from a fresh model: epochs until the test accuracy reaches the target."""
    trainer.fresh()
    accuracy = 0.0
    for k in range(max_epochs):
        trainer.epoch(k)
        accuracy = trainer.accuracy()  # a host round trip per epoch: we must decide to stop
        if accuracy >= TARGET_ACCURACY:
            return {"epochs": k + 1, "accuracy": accuracy, "reached": True}
    return {"epochs": max_epochs, "accuracy": accuracy, "reached": False}


def measure(name: str, repeat: int, max_epochs: int) -> dict[str, Any]:
    """Everything one trainer reports; run in a fresh process (see ``main``)."""
    rss_start = peak_rss_bytes()  # Python, NumPy and this module: no JAX, no PyTorch yet
    trainer = build(name)  # imports the trainer's libraries, makes the data and the model
    rss_setup = peak_rss_bytes()
    # Compilation is timed first, while nothing is cached (empty for eager PyTorch).
    compile_s = trainer.compile_seconds()

    runs: list[dict[str, Any]] = []

    def run() -> None:
        runs.append(train_to_accuracy(trainer, max_epochs))
        trainer.wait()

    # The first run pays what is left of the one-off costs (PyTorch's lazy set-up, JAX's
    # first dispatch of each compiled function): timed on its own, excluded from the others.
    first_run_s = seconds(run)
    # The peak after a whole training run: later runs repeat the same work. Read before
    # `helpers` is imported for timing, which would bring JAX into the PyTorch process.
    memory = {
        "rss_at_start_bytes": rss_start,
        "rss_after_setup_bytes": rss_setup,
        "peak_rss_bytes": peak_rss_bytes(),
        "device_peak_bytes": None if name.startswith("pytorch") else device_peak_bytes(),
    }

    import helpers

    to_accuracy = helpers.timeit(run, repeat=repeat, calls=1, warmup=0)
    outcomes = {(r["epochs"], r["reached"]) for r in runs}
    assert len(outcomes) == 1, f"runs from the same seed disagree: {outcomes}"

    def one_epoch() -> None:
        trainer.epoch(0)
        trainer.wait()

    trainer.fresh()
    epoch = helpers.timeit(one_epoch, repeat=repeat)
    breakdown = trainer.breakdown(repeat) if hasattr(trainer, "breakdown") else None
    result = runs[-1]
    return {
        "trainer": name,
        "epochs_to_target": result["epochs"],
        "reached_target": result["reached"],
        "final_test_accuracy": result["accuracy"],
        "steps": result["epochs"] * STEPS_PER_EPOCH,
        "time_to_accuracy": timing_record(to_accuracy),
        "first_run_s": first_run_s,
        "compile_s": compile_s,
        "epoch": timing_record(epoch),
        "epoch_breakdown": breakdown,
        "steps_per_second": STEPS_PER_EPOCH / epoch.median,
        "memory": memory,
        "device": _device(name),
        "threads": getattr(trainer, "threads", None),  # PyTorch's intra-op threads
    }


def _device(name: str) -> str:
    if name.startswith("pytorch"):
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"  # the model stays on the CPU
    import jax

    return str(jax.devices()[0].device_kind)


def _start(command: list[str]) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ.copy())


def _finish(name: str, process: subprocess.Popen) -> dict[str, Any]:
    stdout, stderr = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"trainer {name} failed:\n{stderr[-3000:]}")
    return json.loads(stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> dict[str, Any]:
    """Each trainer in its own fresh process; the whole benchmark as a JSON-ready dict."""
    repeat, max_epochs = (1, 1) if quick else (15, 30)
    commands = {name: [sys.executable, "-m", "benchmarks.training", "--trainer", name,
                       "--repeat", str(repeat), "--max-epochs", str(max_epochs)]
                for name in TRAINERS}
    # A full run starts each process after the previous one has finished, so that they never
    # compete for the cores. A quick run checks the code, not the timings: all at once.
    results = {}
    if quick:
        started = {name: _start(command) for name, command in commands.items()}
        for name, process in started.items():
            results[name] = _finish(name, process)
    else:
        for name, command in commands.items():
            results[name] = _finish(name, _start(command))
    ttas = {name: r["time_to_accuracy"]["median_s"] for name, r in results.items()}
    epochs = {name: r["epoch"]["median_s"] for name, r in results.items()}
    return {
        "setup": {
            "train_size": TRAIN_SIZE, "test_size": TEST_SIZE, "batch_size": BATCH_SIZE,
            "steps_per_epoch": STEPS_PER_EPOCH, "optimizer": f"Adam, learning rate {LEARNING_RATE}",
            "model": f"2 -> {HIDDEN} tanh -> 1 logit", "target_accuracy": TARGET_ACCURACY,
            "max_epochs": max_epochs, "repeat": repeat,
        },
        "trainers": results,
        "summary": {
            "scan_epoch_speedup_vs_dataloader": epochs["jax_dataloader"] / epochs["jax_scan"],
            "scan_time_to_accuracy_speedup_vs_pytorch": ttas["pytorch"] / ttas["jax_scan"],
            "scan_time_to_accuracy_speedup_vs_pytorch_1_thread":
                ttas["pytorch_1_thread"] / ttas["jax_scan"],
            "scan_epoch_speedup_vs_pytorch": epochs["pytorch"] / epochs["jax_scan"],
            "dataloader_time_to_accuracy_speedup_vs_pytorch":
                ttas["pytorch"] / ttas["jax_dataloader"],
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainer", choices=TRAINERS, help="run one trainer in this process")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--max-epochs", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="one short run of each trainer")
    args = parser.parse_args(argv)
    if args.trainer:
        result = measure(args.trainer, args.repeat, args.max_epochs)
    else:
        result = run(quick=args.quick)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
