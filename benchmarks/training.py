"""The book's XOR classifier trained to the same test accuracy by PyTorch and by JAX, in pairs.

Two pairs, each comparing like with like:

- **The loader loop.** ``pytorch_dataloader``: the loop a PyTorch user writes, ``nn.Sequential``,
  ``BCEWithLogitsLoss``, ``torch.optim.Adam`` and a ``DataLoader``, run eagerly on one thread
  (``PYTORCH_THREADS``); against ``jax_nnx_dataloader``: chapter 11's training loop, the book's
  Flax NNX ``MLPClassifier`` with an ``nnx.Optimizer``, one step per batch under ``nnx.jit``,
  fed by the same ``DataLoader`` (the same sampler, seed and batches; ``helpers.numpy_collate``
  makes them NumPy arrays instead of tensors). A third trainer over the same loader,
  ``jax_functional_dataloader``, changes one thing from the chapter's loop: the step in NNX's
  functional form, which chapter 11 also shows and times (below).
- **Data already in memory.** ``pytorch_preloaded``: the data held as two tensors, each epoch
  shuffled once and cut into batches by slicing, eagerly on one thread;
  ``pytorch_preloaded_default_threads``: the same with PyTorch's default number of threads
  (for operations this small its threads only add synchronization, and on a machine shared
  with other programs they can cost many times the work); ``pytorch_compiled``: the one-thread
  loop with the model and its loss, and the optimizer's step, compiled by ``torch.compile``;
  against ``jax_scan``: chapter 11's whole
  epoch compiled with ``lax.scan`` over data that stays on the device, shuffled by the same
  permutations.

The two JAX steps over the loader compute the same training run (the same loss, gradients and
Adam updates) and differ in how the model reaches the compiled code. Chapter 11's step takes
the model and the optimizer objects: ``nnx.jit`` walks their object graph in Python at every
call to find their arrays, and afterwards writes the changes back into them. The functional
step takes the model apart once with ``nnx.split`` into its graphdef (the structure, a
constant) and its parameters (an ``nnx.State`` of arrays); the step is then a pure function of
``(params, opt_state)`` and a batch, compiled by ``jax.jit``, that rebuilds the model with
``nnx.merge`` only while it is traced and updates with Optax directly. For a network this small
the per-call traversal costs more than the compiled step itself (chapter 11 times the two steps
side by side; Flax's guide "Performance considerations" names the functional loop as the way to
avoid it). The scanned epoch uses the functional step, as chapter 11's does, since
``lax.scan`` carries plain pytrees.

Every trainer uses the same data (``helpers.XORDataset``), the same network (2 -> 8 tanh ->
1), the same initial weights (``initial_parameters``, drawn with NumPy, so that no trainer is
luckier than another in where it starts), the same batch size, Adam with the same learning
rate, and drops the last incomplete batch, so an epoch is the same number of steps everywhere.
Each trains epoch by epoch until the test accuracy reaches ``TARGET_ACCURACY`` (or
``max_epochs`` pass).

Every trainer runs in a fresh Python process (``python -m benchmarks.training --trainer NAME``),
so that the peak memory it reports is its own, with only the libraries it needs imported: the
PyTorch trainers' processes never import JAX, the scanned trainer's never imports PyTorch, and
the JAX ``DataLoader`` trainers' import both. That is why this module imports ``helpers``
(whose ``__init__`` imports JAX) only inside functions. The processes stay alive while the
suite times them in interleaved rounds (see ``run``), so that a machine shared with other
programs slows every trainer alike.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    WorkerProcess,
    device_peak_bytes,
    peak_rss_bytes,
    seconds,
    smallest_count,
    timing_record,
)

TRAINERS = ("pytorch_dataloader", "jax_nnx_dataloader", "jax_functional_dataloader",
            "pytorch_preloaded", "pytorch_preloaded_default_threads", "pytorch_compiled",
            "jax_scan")
# The JAX trainers over the DataLoader: chapter 11's loop, and its step in functional form.
JAX_DATALOADER = ("jax_nnx_dataloader", "jax_functional_dataloader")
PYTORCH_PRELOADED = ("pytorch_preloaded", "pytorch_preloaded_default_threads",
                     "pytorch_compiled")
# PyTorch on one thread: for operations on a batch of 128 by 8 numbers its intra-op threads
# have nothing to share, and while other programs use the cores they wait for each other
# (the extra trainer ``pytorch_preloaded_default_threads`` measures it).
PYTORCH_THREADS = 1
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


def initial_parameters() -> dict[str, dict[str, np.ndarray]]:
    """The weights every trainer starts from, drawn with NumPy from ``SEED``.

    Kernels at the scale of Flax's default (LeCun normal: standard deviation ``1/sqrt(fan_in)``),
    biases zero; laid out as Flax's ``nnx.Linear`` keeps them, ``(in, out)``, which PyTorch's
    ``nn.Linear`` stores transposed.
    """
    rng = np.random.default_rng(SEED)

    def kernel(fan_in: int, fan_out: int) -> np.ndarray:
        return (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)

    return {"hidden": {"kernel": kernel(2, HIDDEN), "bias": np.zeros(HIDDEN, np.float32)},
            "output": {"kernel": kernel(HIDDEN, 1), "bias": np.zeros(1, np.float32)}}


def epoch_order(k: int) -> np.ndarray:
    """The shuffled order of epoch ``k`` for the trainers over data in memory (seeded)."""
    return np.random.default_rng(SEED + k).permutation(TRAIN_SIZE)


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
    """Idiomatic eager PyTorch, as its tutorials teach it, over a ``DataLoader``.

    One model and one optimizer for the whole process; ``fresh()`` puts the initial weights
    back and zeroes Adam's state in place (which a compiled subclass needs, so that its
    compiled code stays valid from one run to the next).
    """

    def __init__(self, threads: int | None = PYTORCH_THREADS) -> None:
        import torch
        from torch import nn
        from torch.utils.data import DataLoader

        if threads is not None:
            torch.set_num_threads(threads)
        self.threads = torch.get_num_threads()
        self.torch = torch
        self.train_set, test_set = datasets()
        self.generator = torch.Generator()
        self.loader = DataLoader(self.train_set, batch_size=BATCH_SIZE, shuffle=True,
                                 drop_last=True, generator=self.generator)
        self.test_x = torch.from_numpy(test_set.data)
        self.test_y = torch.from_numpy(test_set.labels)
        self.loss_fn = nn.BCEWithLogitsLoss()
        self.model = nn.Sequential(nn.Linear(2, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1))
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=LEARNING_RATE)
        start = initial_parameters()
        self.start = [(layer, torch.from_numpy(start[name]["kernel"].T.copy()),
                       torch.from_numpy(start[name]["bias"]))
                      for layer, name in ((self.model[0], "hidden"), (self.model[2], "output"))]

    def fresh(self) -> None:
        self.generator.manual_seed(SEED)
        with self.torch.no_grad():
            for layer, weight, bias in self.start:
                layer.weight.copy_(weight)
                layer.bias.copy_(bias)
            for state in self.optimizer.state.values():  # empty before the first step
                for value in state.values():
                    value.zero_()
        self.optimizer.zero_grad()

    def step(self, x, y) -> None:
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(x).squeeze(1), y)
        loss.backward()
        self.optimizer.step()

    def epoch(self, k: int) -> None:
        self.model.train()
        for x, y in self.loader:
            self.step(x, y.float())

    def accuracy(self) -> float:
        self.model.eval()
        with self.torch.no_grad():
            predicted = self.model(self.test_x).squeeze(1) > 0
            return (predicted == self.test_y.bool()).float().mean().item()


class PyTorchPreloadedTrainer(PyTorchTrainer):
    """The same eager step over data held as tensors: shuffled once per epoch, then sliced.

    The counterpart of the scanned epochs' device-resident data: no loader, no per-sample
    Python; the same permutations as ``jax_scan`` (``epoch_order``).
    """

    def __init__(self, threads: int | None = PYTORCH_THREADS) -> None:
        super().__init__(threads)
        torch = self.torch
        self.train_x = torch.from_numpy(self.train_set.data)
        self.train_y = torch.from_numpy(self.train_set.labels).float()

    def epoch(self, k: int) -> None:
        self.model.train()
        used = self.torch.from_numpy(epoch_order(k)[: STEPS_PER_EPOCH * BATCH_SIZE])
        xs, ys = self.train_x[used], self.train_y[used]  # one gather per epoch
        for i in range(0, len(used), BATCH_SIZE):
            self.step(xs[i : i + BATCH_SIZE], ys[i : i + BATCH_SIZE])


class PyTorchCompiledTrainer(PyTorchPreloadedTrainer):
    """The pre-loaded loop with ``torch.compile``: the model with its loss, and Adam's step.

    As PyTorch's tutorials compile a training loop: the forward pass and the loss compiled
    (``torch.compile`` derives the backward pass from them), and the optimizer's step compiled
    apart. Compilation happens at the first calls; ``compile_seconds`` makes them, timed.
    """

    def __init__(self, threads: int | None = PYTORCH_THREADS) -> None:
        super().__init__(threads)
        torch = self.torch
        self.loss_of = torch.compile(
            lambda x, y: self.loss_fn(self.model(x).squeeze(1), y))
        self.optimizer_step = torch.compile(self.optimizer.step)

    def step(self, x, y) -> None:
        self.optimizer.zero_grad()
        self.loss_of(x, y).backward()
        self.optimizer_step()

    def compile_seconds(self) -> dict[str, float]:
        # Two steps, each timed: the first compiles; the second may compile again for
        # what the first changed (Adam's state now exists). ``fresh`` undoes them both.
        self.fresh()
        x, y = self.train_x[:BATCH_SIZE], self.train_y[:BATCH_SIZE]
        return {"first_step": seconds(lambda: self.step(x, y)),
                "second_step": seconds(lambda: self.step(x, y))}


class _JaxTrainer(Trainer):
    """What every JAX trainer shares: the data, Adam, the loss, the test set on the device."""

    def __init__(self) -> None:
        import jax
        import jax.numpy as jnp
        import optax

        self.jax, self.jnp = jax, jnp
        self.train_set, self.test_set = datasets()
        self.tx = optax.adam(LEARNING_RATE)

        def loss_fn(model, batch):
            """The mean binary cross-entropy of a batch, from the model's logits."""
            x, y = batch
            return optax.sigmoid_binary_cross_entropy(model(x), y).mean()

        self.loss_fn = loss_fn
        self.test_x = jax.device_put(self.test_set.data)
        self.test_y = jax.device_put(self.test_set.labels)

    def _batch_example(self):
        return (self.train_set.data[:BATCH_SIZE], self.train_set.labels[:BATCH_SIZE])


class _NnxTrainer(_JaxTrainer):
    """Chapter 11's style: the model and an ``nnx.Optimizer``, updated in place by a step
    under ``nnx.jit``.

    One model and one optimizer for the whole process, as PyTorch's trainers keep theirs:
    ``fresh()`` puts the initial weights back and Adam's initial state and step count, saved
    once (copies of the arrays), so that a run's set-up is not part of its time.
    """

    def __init__(self) -> None:
        super().__init__()
        from flax import nnx

        from helpers.models import MLPClassifier  # imports helpers, and with it JAX: fine here

        jax, jnp, loss_fn = self.jax, self.jnp, self.loss_fn
        self.nnx = nnx

        def create():
            """A model with the common initial weights and its optimizer, as in chapter 11."""
            model = MLPClassifier(hidden=HIDDEN, rngs=nnx.Rngs(SEED))
            params = nnx.state(model, nnx.Param)
            nnx.replace_by_pure_dict(params, initial_parameters())  # the common start
            nnx.update(model, params)
            return model, nnx.Optimizer(model, self.tx, wrt=nnx.Param)

        def step_in_place(model, optimizer, batch):
            """Chapter 11's step (the chapter's also returns the batch's accuracy as an
            auxiliary output; here, as in every trainer, the step computes the loss alone)."""
            loss, grads = nnx.value_and_grad(loss_fn)(model, batch)
            optimizer.update(model, grads)  # changes the model and the optimizer in place
            return loss

        def test_accuracy(model, x, y):
            return jnp.mean((model(x) > 0) == y)

        self.create = create
        self.step_fn = step_in_place
        self.train_step = nnx.jit(step_in_place)
        self.test_accuracy_fn = test_accuracy
        self.test_accuracy = nnx.jit(test_accuracy)
        self.model, self.optimizer = create()
        self.start = jax.block_until_ready(  # copies: the arrays of the first state
            jax.tree.map(jnp.copy, (nnx.state(self.model), nnx.state(self.optimizer))))

    def fresh(self) -> None:
        self.nnx.update(self.model, self.start[0])
        self.nnx.update(self.optimizer, self.start[1])

    def step(self, batch):
        return self.train_step(self.model, self.optimizer, batch)

    def accuracy(self) -> float:
        return float(self.test_accuracy(self.model, self.test_x, self.test_y))

    def wait(self) -> None:
        nnx = self.nnx
        self.jax.block_until_ready((nnx.state(self.model), nnx.state(self.optimizer)))

    def compile_seconds(self) -> dict[str, float]:
        model, optimizer = self.create()
        nnx = self.nnx
        return {
            "train_step": seconds(lambda: nnx.jit(self.step_fn).lower(
                model, optimizer, self._batch_example()).compile()),
            "test_accuracy": seconds(lambda: nnx.jit(self.test_accuracy_fn).lower(
                model, self.test_x, self.test_y).compile()),
        }


class _FunctionalTrainer(_JaxTrainer):
    """NNX's functional form: the model split once, a pure step under ``jax.jit``."""

    def __init__(self) -> None:
        super().__init__()
        import optax
        from flax import nnx

        from helpers.models import MLPClassifier  # imports helpers, and with it JAX: fine here

        jax, jnp, loss_fn = self.jax, self.jnp, self.loss_fn
        # The structure of the model, split off once; a constant of every traced function.
        graphdef, _ = nnx.split(MLPClassifier(hidden=HIDDEN, rngs=nnx.Rngs(SEED)))

        def create(seed):
            """A fresh training state: the parameters and Adam's state, as one pytree."""
            _, params = nnx.split(MLPClassifier(hidden=HIDDEN, rngs=nnx.Rngs(seed)))
            nnx.replace_by_pure_dict(params, initial_parameters())  # the common start
            return params, self.tx.init(params)

        def logits_of(params, x):
            return nnx.merge(graphdef, params)(x)  # runs while tracing, not per call

        def loss_of(params, batch):
            return loss_fn(nnx.merge(graphdef, params), batch)

        def train_step(state, batch):
            params, opt_state = state
            loss, grads = jax.value_and_grad(loss_of)(params, batch)
            updates, opt_state = self.tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), loss

        def test_accuracy(params, x, y):
            return jnp.mean((logits_of(params, x) > 0) == y)

        self.create = create
        self.train_step_fn = train_step
        self.train_step = jax.jit(train_step)
        self.test_accuracy_fn = test_accuracy
        self.test_accuracy = jax.jit(test_accuracy)
        # The initial training state, made once: a run's set-up is not part of its time,
        # as PyTorch's trainers only copy their initial weights back.
        self.start = jax.block_until_ready(create(SEED))

    def fresh(self) -> None:
        self.state = self.start  # arrays never change: every run can start from them

    def step(self, batch):
        self.state, loss = self.train_step(self.state, batch)
        return loss

    def accuracy(self) -> float:
        params, _ = self.state
        return float(self.test_accuracy(params, self.test_x, self.test_y))

    def wait(self) -> None:
        self.jax.block_until_ready(self.state)

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


class _OverDataLoader:
    """A JAX trainer's epoch as a step per batch, the batches from PyTorch's ``DataLoader``
    as NumPy arrays (``helpers.numpy_collate``): the same sampler, seed and batches as
    ``pytorch_dataloader``'s. Mixed into a trainer that has ``step(batch)``."""

    def _make_loader(self) -> None:
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

    def epoch(self, k: int):
        loss = None
        for batch in self.loader:
            loss = self.step(batch)
        return loss

    def breakdown(self, repeat: int) -> dict[str, Any]:
        """Where an epoch's time goes: the loader alone, and the steps alone.

        ``loader_only`` iterates the loader without training. ``steps_only`` runs the same
        Python loop of steps over batches already cut and placed on the device, so that only
        the per-step work in Python (the dispatch, and for ``nnx.jit`` its walk over the
        objects) and the steps themselves remain. ``steps_only_numpy_batches`` runs it over
        the same batches kept as NumPy arrays, as the loader yields them: each call then also
        copies its batch to the device, and the difference is that copy. ``epoch`` is the
        whole epoch again, so that all four are timed in the same interleaved rounds. Each
        timed call goes on training from where the last one stopped, as epochs do; the last
        step's loss, one output of its compiled call, says when the call is done.
        """
        from benchmarks.common import Variant, interleaved

        jax = self.jax

        def loader_only(_) -> None:
            for _ in self.loader:
                pass

        numpy_batches = list(self.loader)
        device_batches = [jax.device_put(batch) for batch in numpy_batches]

        def steps_over(batches) -> Any:
            for batch in batches:
                loss = self.step(batch)
            return loss

        timed = interleaved({
            "epoch": Variant(lambda _: self.epoch(0)),
            "loader_only": Variant(loader_only),
            "steps_only": Variant(steps_over, lambda: device_batches),
            "steps_only_numpy_batches": Variant(steps_over, lambda: numpy_batches),
        }, repeat)
        return {name: timing_record(timing) for name, timing in timed.items()}


class JaxNnxDataLoaderTrainer(_OverDataLoader, _NnxTrainer):
    """Chapter 11's loop: ``nnx.jit`` over the model and ``nnx.Optimizer``, per batch."""

    def __init__(self) -> None:
        super().__init__()
        self._make_loader()


class JaxFunctionalDataLoaderTrainer(_OverDataLoader, _FunctionalTrainer):
    """The same loop with the functional step: ``nnx.split`` once, ``jax.jit`` per batch."""

    def __init__(self) -> None:
        super().__init__()
        self._make_loader()


class JaxScanTrainer(_FunctionalTrainer):
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

    def epoch(self, k: int) -> None:
        self.state, _ = self.train_epoch(self.state, self.train_x, self.train_y, epoch_order(k))

    def compile_seconds(self) -> dict[str, float]:
        # The scanned epoch contains the step, which is never compiled on its own here.
        state = self.create(SEED)
        return {
            "train_epoch": seconds(lambda: self.jax.jit(self.train_epoch_fn).lower(
                state, self.train_x, self.train_y, epoch_order(0)).compile()),
            "test_accuracy": self._compile_test_accuracy_seconds(state),
        }


def build(name: str) -> Trainer:
    return {
        "pytorch_dataloader": PyTorchTrainer,
        "jax_nnx_dataloader": JaxNnxDataLoaderTrainer,
        "jax_functional_dataloader": JaxFunctionalDataLoaderTrainer,
        "pytorch_preloaded": PyTorchPreloadedTrainer,
        "pytorch_preloaded_default_threads": lambda: PyTorchPreloadedTrainer(threads=None),
        "pytorch_compiled": PyTorchCompiledTrainer,
        "jax_scan": JaxScanTrainer,
    }[name]()


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


def serve(name: str, max_epochs: int) -> None:
    """One trainer's process: set up, then train on request from ``run``, one line each.

    It prints one JSON line about its set-up (compile times, the first run, the peak memory),
    then answers each request on its standard input: ``{"to_accuracy": true}`` trains a fresh
    model to the target once, ``{"epoch": calls}`` times ``calls`` epochs, ``{"breakdown":
    repeat}`` takes a JAX ``DataLoader`` trainer's epoch apart, ``{"quit": true}`` ends the
    process.
    """
    rss_start = peak_rss_bytes()  # Python, NumPy and this module: no JAX, no PyTorch yet
    trainer = build(name)  # imports the trainer's libraries, makes the data and the model
    rss_setup = peak_rss_bytes()
    # Compilation is timed first, while nothing is cached (empty for eager PyTorch).
    try:
        compile_s = trainer.compile_seconds()
    except Exception as error:  # torch.compile needs a working C++ compiler, for one
        if name != "pytorch_compiled":
            raise
        _answer({"error": f"{type(error).__name__}: {error}"[:2000]})
        return

    def to_accuracy() -> dict[str, Any]:
        start = time.perf_counter()
        outcome = train_to_accuracy(trainer, max_epochs)
        trainer.wait()
        return {"seconds": time.perf_counter() - start, **outcome}

    # The first run pays what is left of the one-off costs (PyTorch's lazy set-up, JAX's
    # first dispatch of each compiled function): timed on its own, excluded from the others.
    first = to_accuracy()
    _answer({
        "compile_s": compile_s,
        "first_run": first,
        # The peak after a whole training run: later runs repeat the same work.
        "memory": {
            "rss_at_start_bytes": rss_start,
            "rss_after_setup_bytes": rss_setup,
            "peak_rss_bytes": peak_rss_bytes(),
            "device_peak_bytes": None if name.startswith("pytorch") else device_peak_bytes(),
        },
        "device": _device(name),
        "threads": getattr(trainer, "threads", None),  # PyTorch's intra-op threads
    })
    trainer.fresh()
    for line in sys.stdin:
        request = json.loads(line)
        if "quit" in request:
            return
        if "to_accuracy" in request:
            _answer(to_accuracy())
        elif "epoch" in request:  # continues training from where the last epoch stopped
            start = time.perf_counter()
            for _ in range(request["epoch"]):
                trainer.epoch(0)
            trainer.wait()
            _answer({"seconds": (time.perf_counter() - start) / request["epoch"]})
        else:
            _answer(trainer.breakdown(request["breakdown"]))


def _answer(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


def _device(name: str) -> str:
    if name.startswith("pytorch"):
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"  # the model stays on the CPU
    import jax

    return str(jax.devices()[0].device_kind)


def _worker(name: str, max_epochs: int) -> WorkerProcess:
    """A trainer's process (``serve``), driven one request at a time."""
    return WorkerProcess(name, ["-m", "benchmarks.training", "--trainer", name,
                                "--max-epochs", str(max_epochs)])


def _epoch_calls(process: WorkerProcess, min_run_seconds: float = 0.02) -> int:
    """How many epochs one timed run of ``process`` needs to last ``min_run_seconds``."""
    process.ask({"epoch": 1})  # warm-up
    return smallest_count(
        lambda count: process.ask({"epoch": count})["seconds"] * count >= min_run_seconds)


def run(quick: bool = False) -> dict[str, Any]:
    """Every trainer in its own process, timed in interleaved rounds; a JSON-ready dict.

    The processes are set up one after the other, so that no two compile at once (a quick
    run, which checks the code and not the timings, starts them all at once). Then each round
    asks every trainer, in a rotating order, for one run to the target and one timed run of
    epochs: on a machine shared with other programs, a slow spell then slows every trainer
    alike, instead of whichever was running at the time.
    """
    import helpers

    repeat, max_epochs = (1, 1) if quick else (15, 30)
    processes: dict[str, WorkerProcess] = {}
    try:
        for name in TRAINERS:
            processes[name] = _worker(name, max_epochs)
            if not quick:
                processes[name].hello = processes[name].read()
        for process in processes.values():
            if process.hello is None:
                process.hello = process.read()
        failed = {name: p.hello["error"] for name, p in processes.items() if "error" in p.hello}
        working = [name for name in TRAINERS if name not in failed]
        calls = {name: _epoch_calls(processes[name]) for name in working}
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in working}
        epochs: dict[str, list[float]] = {name: [] for name in working}
        for r in range(repeat):
            k = r % len(working)
            for name in working[k:] + working[:k]:
                runs[name].append(processes[name].ask({"to_accuracy": True}))
                epochs[name].append(processes[name].ask({"epoch": calls[name]})["seconds"])
        breakdown = {name: processes[name].ask({"breakdown": repeat})
                     for name in JAX_DATALOADER}
    finally:
        for process in processes.values():
            process.close()

    results: dict[str, Any] = {}
    for name in TRAINERS:
        if name in failed:
            results[name] = {"trainer": name, "error": failed[name]}
            continue
        outcomes = {(r["epochs"], r["reached"]) for r in runs[name]}
        assert len(outcomes) == 1, f"{name}: runs from the same start disagree: {outcomes}"
        hello, last = processes[name].hello, runs[name][-1]
        to_accuracy = helpers.Timing(tuple(r["seconds"] for r in runs[name]), 1)
        epoch = helpers.Timing(tuple(epochs[name]), calls[name])
        results[name] = {
            "trainer": name,
            "epochs_to_target": last["epochs"],
            "reached_target": last["reached"],
            "final_test_accuracy": last["accuracy"],
            "steps": last["epochs"] * STEPS_PER_EPOCH,
            "time_to_accuracy": timing_record(to_accuracy),
            "first_run_s": hello["first_run"]["seconds"],
            "compile_s": hello["compile_s"],
            "epoch": timing_record(epoch),
            "epoch_breakdown": breakdown.get(name),
            "steps_per_second": STEPS_PER_EPOCH / epoch.median,
            "memory": hello["memory"],
            "device": hello["device"],
            "threads": hello["threads"],
        }
    return {
        "setup": {
            "train_size": TRAIN_SIZE, "test_size": TEST_SIZE, "batch_size": BATCH_SIZE,
            "steps_per_epoch": STEPS_PER_EPOCH, "optimizer": f"Adam, learning rate {LEARNING_RATE}",
            "model": f"2 -> {HIDDEN} tanh -> 1 logit", "target_accuracy": TARGET_ACCURACY,
            "max_epochs": max_epochs, "repeat": repeat,
            "initial_weights": "the same for every trainer (initial_parameters, NumPy)",
        },
        "trainers": results,
        "summary": summary(results),
    }


def summary(results: dict[str, Any]) -> dict[str, Any]:
    """The pairs' ratios: how many times faster the JAX side is (above 1: JAX is faster).

    The headline pair over the ``DataLoader`` is chapter 11's loop against eager PyTorch; the
    functional step, against the same PyTorch loop, has keys of its own, and so has the ratio
    of the two JAX steps, which is what ``nnx.jit``'s work per call costs an epoch.
    """
    ttas = {name: r["time_to_accuracy"]["median_s"]
            for name, r in results.items() if "error" not in r}
    epochs = {name: r["epoch"]["median_s"] for name, r in results.items() if "error" not in r}
    preloaded = [name for name in PYTORCH_PRELOADED if name in ttas]
    fastest = min(preloaded, key=ttas.get)
    return {
        # Chapter 11's loop (nnx.jit over the model and nnx.Optimizer) against PyTorch.
        "dataloader_time_to_accuracy_speedup_vs_pytorch":
            ttas["pytorch_dataloader"] / ttas["jax_nnx_dataloader"],
        "dataloader_epoch_speedup_vs_pytorch":
            epochs["pytorch_dataloader"] / epochs["jax_nnx_dataloader"],
        # The functional step (nnx.split once, jax.jit) over the same loader.
        "functional_dataloader_time_to_accuracy_speedup_vs_pytorch":
            ttas["pytorch_dataloader"] / ttas["jax_functional_dataloader"],
        "functional_dataloader_epoch_speedup_vs_pytorch":
            epochs["pytorch_dataloader"] / epochs["jax_functional_dataloader"],
        # One change: the functional step in place of chapter 11's.
        "functional_epoch_speedup_vs_nnx_dataloader":
            epochs["jax_nnx_dataloader"] / epochs["jax_functional_dataloader"],
        # One change: the functional step's epoch scanned instead of looped over the loader.
        "scan_epoch_speedup_vs_functional_dataloader":
            epochs["jax_functional_dataloader"] / epochs["jax_scan"],
        "scan_time_to_accuracy_speedup_vs_pytorch":
            ttas["pytorch_dataloader"] / ttas["jax_scan"],
        # Against the fastest of PyTorch's loops over pre-loaded tensors.
        "fastest_pytorch_preloaded": fastest,
        "scan_time_to_accuracy_speedup_vs_pytorch_preloaded": ttas[fastest] / ttas["jax_scan"],
        "scan_epoch_speedup_vs_pytorch_preloaded": epochs[fastest] / epochs["jax_scan"],
        "scan_time_to_accuracy_speedup_vs_pytorch_compiled":
            ttas["pytorch_compiled"] / ttas["jax_scan"] if "pytorch_compiled" in ttas else None,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainer", choices=TRAINERS,
                        help="serve one trainer in this process (driven by run)")
    parser.add_argument("--max-epochs", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="one short run of each trainer")
    args = parser.parse_args(argv)
    if args.trainer:
        serve(args.trainer, args.max_epochs)
    else:
        print(json.dumps(run(quick=args.quick)))


if __name__ == "__main__":
    main()
