"""The Part V language model trained by JAX and by PyTorch: tokens per second, and MFU.

The model is ``helpers.lm.GPT``: a decoder-only transformer with pre-RMSNorm blocks, causal
attention through ``jax.nn.dot_product_attention``, its blocks stacked with ``nnx.vmap`` and
applied with ``nnx.scan``. Three trainers train it from the same initial weights on the same
batches with the same optimizer (the global norm clipped, then AdamW with warm-up and cosine
decay, weight decay only on the weight matrices):

- ``jax``: the step the chapter "A language model" teaches, ``helpers.lm.train_step`` (an
  ``nnx.jit`` step) over ``nnx.Optimizer(model, adamw_warmup_cosine(...), wrt=nnx.Param)``;
- ``pytorch_eager``: a port of the model to PyTorch (``TorchGPT``: ``nn.RMSNorm`` with Flax's
  epsilon, ``F.scaled_dot_product_attention(is_causal=True)``, GELU with the tanh
  approximation that ``jax.nn.gelu`` uses by default, an untied head), with
  ``clip_grad_norm_`` and ``torch.optim.AdamW`` in two parameter groups, run eagerly;
- ``pytorch_compiled``: the same, with the model and its loss, and the clipping and the
  optimizer's step, compiled by ``torch.compile`` (as PyTorch's tutorials compile a training
  loop; the learning rate is a tensor, so that a new rate does not recompile).

Variants of the JAX trainer, each changing one thing, say what its speed depends on:
``jax_bf16`` computes in bfloat16 (``GPTConfig(dtype=jnp.bfloat16)``, parameters still
float32); ``jax_unrolled`` applies the two blocks in a Python loop instead of ``nnx.scan``
(a change to the model, measured here only); ``jax_huge_pages`` runs in a process whose
``malloc`` backs large buffers with huge pages (the environment setting of the appendix's
ladder); ``jax_small_batch`` trains on a quarter of the batch.

Every trainer runs in a process of its own (``python -m benchmarks.lm --worker NAME``), the
PyTorch ones without JAX imported, and the suite times them in interleaved rounds as
``benchmarks.training`` does. Both libraries use every core: XLA's CPU runtime does by
default, and PyTorch is given ``torch.set_num_threads(os.cpu_count())``.

*Model FLOPs utilization* (MFU) is the arithmetic the model needs per token, times the tokens
per second, divided by the machine's peak: here the measured speed of a large matrix product
in jitted JAX (float32, and bfloat16 for the bfloat16 variant). The arithmetic per token is
``6 N`` for the ``N`` weights of the matrix products (two FLOPs per weight forward, four
backward) plus ``12 L T d`` for attention's two products over ``T`` positions in ``L`` layers
of width ``d``, as PaLM's paper counts it; the compiled step's ``cost_analysis()`` checks it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    WorkerProcess,
    peak_rss_bytes,
    resource,
    smallest_count,
    timing_record,
)

SEED = 0
CONTEXT, LAYERS, D_MODEL, HEADS, MLP_RATIO = 128, 2, 64, 4, 4
BATCH_SIZE = 16  # the chapter's
PEAK_LR, WARMUP_STEPS, TOTAL_STEPS, WEIGHT_DECAY, CLIP_NORM = 3e-3, 10, 1000, 0.1, 1.0
RMS_EPSILON = 1e-6  # Flax's nnx.RMSNorm default; PyTorch's nn.RMSNorm defaults to another
QUICK = {"context": 32, "batch_size": 4, "check_steps": 4, "pool": 4}
FULL = {"context": CONTEXT, "batch_size": BATCH_SIZE, "check_steps": 20, "pool": 16}
# The trainers of the comparison, and the JAX variants (quick runs skip torch.compile,
# which takes a minute or more to compile, and the variants).
TRAINERS = ("jax", "pytorch_eager", "pytorch_compiled")
VARIANTS = ("jax_bf16", "jax_unrolled", "jax_huge_pages", "jax_small_batch")
HUGE_PAGES = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}  # as in benchmarks.elementwise
ENVIRONMENTS = {"jax_huge_pages": HUGE_PAGES}
MATMUL_N = {"quick": 256, "full": 2048}
# PyTorch's compiled AdamW divides by the learning rate (its "capturable" form), so the rate
# 0 of the warm-up's first step would give NaN weights: the compiled trainer uses this instead.
COMPILED_MIN_LR = 1e-12


# --- The set-up every trainer shares -------------------------------------------------------


def schedule(step: int) -> float:
    """The learning rate at ``step``: ``optax.warmup_cosine_decay_schedule`` as
    ``helpers.lm.adamw_warmup_cosine`` sets it, in plain Python for PyTorch's processes."""
    if step < WARMUP_STEPS:
        return PEAK_LR * step / WARMUP_STEPS
    end = PEAK_LR / 10
    progress = min(step - WARMUP_STEPS, TOTAL_STEPS - WARMUP_STEPS) / (
        TOTAL_STEPS - WARMUP_STEPS)
    return end + (PEAK_LR - end) * 0.5 * (1 + math.cos(math.pi * progress))


def flops_per_token(context: int, layers: int = LAYERS, d: int = D_MODEL,
                    vocab: int = 0) -> dict[str, int]:
    """Training FLOPs per token: 6 per weight of the matrix products, plus attention's."""
    hidden = MLP_RATIO * d
    per_layer = d * 3 * d + d * d + d * hidden + hidden * d  # qkv, out, up, down
    matmul_weights = layers * per_layer + d * vocab  # and the head
    attention = 12 * layers * context * d
    return {"matmul_weights": matmul_weights, "six_n": 6 * matmul_weights,
            "attention": attention, "total": 6 * matmul_weights + attention}


def make_setup(quick: bool, directory: Path) -> dict[str, Any]:
    """Tokens, batches and initial weights, written to ``directory`` for the workers."""
    import jax
    from flax import nnx

    from helpers import lm

    sizes = QUICK if quick else FULL
    text = lm.load_corpus()
    tokenizer = lm.CharTokenizer(text)
    windows = lm.TokenWindows(tokenizer.encode(text), sizes["context"])
    rng = np.random.default_rng(SEED)
    steps = sizes["check_steps"] + sizes["pool"]
    picks = rng.integers(0, len(windows), (steps, sizes["batch_size"]))
    batches = np.stack([np.stack([windows[i] for i in row]) for row in picks])
    config = {"vocab_size": tokenizer.vocab_size, "context": sizes["context"],
              "layers": LAYERS, "d_model": D_MODEL, "heads": HEADS, "mlp_ratio": MLP_RATIO}
    model = lm.GPT(lm.GPTConfig(**config), rngs=nnx.Rngs(SEED))
    params = nnx.to_pure_dict(nnx.state(model, nnx.Param))
    flat = {"/".join(str(k.key) for k in path): np.asarray(value)
            for path, value in jax.tree_util.tree_flatten_with_path(params)[0]}
    np.savez(directory / "setup.npz", batches=batches,
             **{f"param:{name}": value for name, value in flat.items()})
    setup = {**sizes, "config": config, "path": str(directory / "setup.npz"),
             "parameters": int(sum(v.size for v in flat.values())),
             "windows": len(windows), "corpus_characters": len(text)}
    (directory / "setup.json").write_text(json.dumps(setup), encoding="utf-8")
    return setup


def load_setup(path: str) -> tuple[dict[str, Any], np.ndarray, dict[str, np.ndarray]]:
    setup = json.loads(Path(path).read_text(encoding="utf-8"))
    with np.load(setup["path"]) as found:
        batches = found["batches"]
        params = {k.split(":", 1)[1]: found[k] for k in found.files if k.startswith("param:")}
    return setup, batches, params


# --- The trainers --------------------------------------------------------------------------


class JaxTrainer:
    """The chapter's step: ``helpers.lm.train_step`` over ``nnx.Optimizer``."""

    def __init__(self, name: str, setup: dict[str, Any], batches: np.ndarray,
                 params: dict[str, np.ndarray]) -> None:
        import jax
        import jax.numpy as jnp
        from flax import nnx

        from helpers import lm

        self.jax, self.lm = jax, lm
        dtype = jnp.bfloat16 if name == "jax_bf16" else jnp.float32
        config = lm.GPTConfig(**setup["config"], dtype=dtype)
        model_class = _unrolled_gpt() if name == "jax_unrolled" else lm.GPT
        self.model = model_class(config, rngs=nnx.Rngs(SEED))
        state = nnx.state(self.model, nnx.Param)
        pure = nnx.to_pure_dict(state)
        for name_, value in params.items():  # the common initial weights
            node = pure
            *parents, leaf = name_.split("/")
            for key in parents:
                node = node[key]
            node[leaf] = jnp.asarray(value)
        nnx.replace_by_pure_dict(state, pure)
        nnx.update(self.model, state)
        self.optimizer = nnx.Optimizer(
            self.model, lm.adamw_warmup_cosine(TOTAL_STEPS, peak_lr=PEAK_LR,
                                               warmup_steps=WARMUP_STEPS,
                                               weight_decay=WEIGHT_DECAY,
                                               clip_norm=CLIP_NORM), wrt=nnx.Param)
        if name == "jax_small_batch":
            batches = batches[:, : max(1, batches.shape[1] // 4)]
        self.batches = [jax.device_put(b) for b in batches]
        self.tokens_per_step = batches.shape[1] * (batches.shape[2] - 1)
        self.threads = os.cpu_count()  # XLA's CPU runtime: a thread per core, by default
        self.cost: dict[str, Any] = {}

    def compile_seconds(self) -> dict[str, float]:
        lowered_at = time.perf_counter()
        lowered = self.lm.train_step.lower(self.model, self.optimizer, self.batches[0])
        compiled_at = time.perf_counter()
        compiled = lowered.compile()
        done = time.perf_counter()
        cost = compiled.cost_analysis()
        cost = cost[0] if isinstance(cost, list) else cost
        text = compiled.as_text()
        self.cost = {"hlo_flops": float(cost.get("flops", 0.0)),
                     "hlo_bytes_accessed": float(cost.get("bytes accessed", 0.0)),
                     "while_loops": text.count(" while("),
                     "copies": text.count(" copy("), "transposes": text.count(" transpose(")}
        return {"trace_and_lower": compiled_at - lowered_at, "compile": done - compiled_at}

    def step(self, batch) -> Any:
        return self.lm.train_step(self.model, self.optimizer, batch)

    def loss_value(self, loss) -> float:
        return float(loss)

    def wait(self, result) -> None:
        self.jax.block_until_ready(result)


def _unrolled_gpt() -> type:
    """``helpers.lm.GPT`` with its blocks applied one after the other in Python, not by
    ``nnx.scan``: the same parameters (still stacked), the same arithmetic, no loop."""
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from helpers import lm

    class UnrolledGPT(lm.GPT):
        def __call__(self, tokens, cache=None, start=0):
            assert cache is None, "training only"
            x = self.tokens(tokens) + self.positions(jnp.arange(tokens.shape[1]))
            graphdef, stacked = nnx.split(self.blocks)
            for layer in range(self.config.layers):
                block = nnx.merge(graphdef, jax.tree.map(lambda a, i=layer: a[i], stacked))
                x, _ = block(x)
            return self.head(self.norm(x)).astype(jnp.float32)

    return UnrolledGPT


def _torch_model_class() -> type:
    import torch
    import torch.nn.functional as F
    from torch import nn

    class TorchBlock(nn.Module):
        def __init__(self, d: int, heads: int, hidden: int) -> None:
            super().__init__()
            self.heads = heads
            self.attention_norm = nn.RMSNorm(d, eps=RMS_EPSILON)
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            self.out = nn.Linear(d, d, bias=False)
            self.mlp_norm = nn.RMSNorm(d, eps=RMS_EPSILON)
            self.up = nn.Linear(d, hidden)
            self.down = nn.Linear(hidden, d)

        def forward(self, x):
            batch, time_, d = x.shape
            q, k, v = self.qkv(self.attention_norm(x)).split(d, dim=-1)
            q, k, v = (a.view(batch, time_, self.heads, d // self.heads).transpose(1, 2)
                       for a in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out(y.transpose(1, 2).reshape(batch, time_, d))
            return x + self.down(F.gelu(self.up(self.mlp_norm(x)), approximate="tanh"))

    class TorchGPT(nn.Module):
        """``helpers.lm.GPT`` in PyTorch: the same layers, in the same order."""

        def __init__(self, vocab_size, context, layers, d_model, heads, mlp_ratio):
            super().__init__()
            self.tokens = nn.Embedding(vocab_size, d_model)
            self.positions = nn.Embedding(context, d_model)
            self.blocks = nn.ModuleList(
                TorchBlock(d_model, heads, mlp_ratio * d_model) for _ in range(layers))
            self.norm = nn.RMSNorm(d_model, eps=RMS_EPSILON)
            self.head = nn.Linear(d_model, vocab_size, bias=False)

        def forward(self, tokens):
            x = self.tokens(tokens) + self.positions(
                torch.arange(tokens.shape[1], device=tokens.device))
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x))

    return TorchGPT


class TorchTrainer:
    """The port, trained eagerly: clipping, then AdamW in two parameter groups."""

    def __init__(self, name: str, setup: dict[str, Any], batches: np.ndarray,
                 params: dict[str, np.ndarray]) -> None:
        import torch
        import torch.nn.functional as F

        torch.set_num_threads(os.cpu_count() or 1)
        self.torch, self.threads = torch, torch.get_num_threads()
        torch.manual_seed(SEED)
        self.model = _torch_model_class()(**setup["config"])
        self._load(params)
        decay = [p for n, p in self.model.named_parameters() if n.endswith(".weight")
                 and "norm" not in n]  # the matrices and the embeddings, as decay_mask
        no_decay = [p for n, p in self.model.named_parameters()
                    if not (n.endswith(".weight") and "norm" not in n)]
        self.parameters = list(self.model.parameters())
        self.compiled = name == "pytorch_compiled"
        lr = torch.tensor(schedule(0)) if self.compiled else schedule(0)
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": WEIGHT_DECAY},
             {"params": no_decay, "weight_decay": 0.0}],
            lr=lr, betas=(0.9, 0.999), eps=1e-8)
        if self.compiled:  # a tensor of its own per group, updated in place
            for group in self.optimizer.param_groups:
                group["lr"] = torch.tensor(schedule(0))
        self.batches = [torch.from_numpy(b.astype(np.int64)) for b in batches]
        self.tokens_per_step = batches.shape[1] * (batches.shape[2] - 1)
        self.count = 0

        def loss_of(windows):
            logits = self.model(windows[:, :-1])
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   windows[:, 1:].reshape(-1))

        def update():
            torch.nn.utils.clip_grad_norm_(self.parameters, CLIP_NORM)
            self.optimizer.step()

        self.loss_of, self.update = loss_of, update
        if self.compiled:
            self.loss_of, self.update = torch.compile(loss_of), torch.compile(update)

    def _load(self, params: dict[str, np.ndarray]) -> None:
        torch = self.torch
        m = self.model
        with torch.no_grad():
            m.tokens.weight.copy_(torch.from_numpy(params["tokens/embedding"]))
            m.positions.weight.copy_(torch.from_numpy(params["positions/embedding"]))
            m.norm.weight.copy_(torch.from_numpy(params["norm/scale"]))
            m.head.weight.copy_(torch.from_numpy(params["head/kernel"].T.copy()))
            for i, block in enumerate(m.blocks):
                def p(name, i=i):
                    return torch.from_numpy(params[f"blocks/{name}"][i].copy())

                block.attention_norm.weight.copy_(p("attention_norm/scale"))
                block.mlp_norm.weight.copy_(p("mlp_norm/scale"))
                block.qkv.weight.copy_(p("attention/qkv/kernel").T)  # (in, out) -> (out, in)
                block.out.weight.copy_(p("attention/out/kernel").T)
                block.up.weight.copy_(p("up/kernel").T)
                block.up.bias.copy_(p("up/bias"))
                block.down.weight.copy_(p("down/kernel").T)
                block.down.bias.copy_(p("down/bias"))

    def compile_seconds(self) -> dict[str, float]:
        return {}

    def step(self, batch) -> Any:
        rate = schedule(self.count)  # the rate of this step, as Optax's count gives it
        for group in self.optimizer.param_groups:
            if self.compiled:
                group["lr"].fill_(max(rate, COMPILED_MIN_LR))
            else:
                group["lr"] = rate
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss_of(batch)
        loss.backward()
        self.update()
        self.count += 1
        return loss

    def loss_value(self, loss) -> float:
        return float(loss.detach())

    def wait(self, result) -> None:
        """PyTorch on the CPU is synchronous: the step is done when it returns."""


# --- A trainer's process -------------------------------------------------------------------


def serve(name: str, setup_path: str) -> None:
    """One trainer's process: set up, answer one JSON line, then time steps on request.

    The first line reports the compile times, the first steps' losses from the common
    initial weights (on the first ``check_steps`` batches), the threads and the memory.
    Each request ``{"steps": n}`` then times ``n`` steps over the pool of batches and
    answers the seconds per step; ``{"quit": true}`` ends the process.
    """
    setup, batches, params = load_setup(setup_path)
    check = setup["check_steps"]
    trainer_class = TorchTrainer if name.startswith("pytorch") else JaxTrainer
    trainer = trainer_class(name, setup, batches, params)
    losses, first = [], []
    try:
        compile_s = trainer.compile_seconds()  # JAX: lowered and compiled apart, timed
        # The first steps, from the common initial weights: their losses check the ports,
        # and the first two are timed apart (for torch.compile, the steps that compile).
        for i in range(check):
            start = time.perf_counter()
            losses.append(trainer.loss_value(trainer.step(trainer.batches[i])))
            if not math.isfinite(losses[-1]):
                raise FloatingPointError(f"the loss of step {i} is {losses[-1]}")
            if i < 2:
                first.append(time.perf_counter() - start)
    except Exception as error:  # torch.compile needs a working C++ compiler, for one
        if name != "pytorch_compiled" or isinstance(error, FloatingPointError):
            raise
        _answer({"error": f"{type(error).__name__}: {error}"[:2000]})
        return
    pool = trainer.batches[check:] or trainer.batches
    _answer({
        "compile_s": {**compile_s, "first_step": first[0], "second_step": first[1]},
        "losses": losses,
        "tokens_per_step": trainer.tokens_per_step,
        "threads": trainer.threads,
        "cost": getattr(trainer, "cost", {}),
        "peak_rss_bytes": peak_rss_bytes(),
    })
    k = 0
    for line in sys.stdin:
        request = json.loads(line)
        if "quit" in request:
            return
        if "profile" in request and resource is None:  # Windows
            _answer({})
            continue
        if "profile" in request:  # page faults and CPU time per step, all threads counted
            n = request["profile"]
            before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        else:
            n, start = request["steps"], time.perf_counter()
        for _ in range(n):
            loss = trainer.step(pool[k % len(pool)])
            k += 1
        trainer.wait(loss)
        elapsed = (time.perf_counter() - start) / n
        if "profile" in request:
            after = resource.getrusage(resource.RUSAGE_SELF)
            _answer({"wall_s_per_step": elapsed,
                     "page_faults_per_step": (after.ru_minflt - before.ru_minflt) / n,
                     "cpu_user_s_per_step": (after.ru_utime - before.ru_utime) / n,
                     "cpu_system_s_per_step": (after.ru_stime - before.ru_stime) / n})
        else:
            _answer({"seconds": elapsed})


def _answer(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


def _worker(name: str, setup_path: str) -> WorkerProcess:
    """A trainer's process (``serve``), driven one request at a time."""
    return WorkerProcess(name, ["-m", "benchmarks.lm", "--worker", name, "--setup", setup_path],
                         ENVIRONMENTS.get(name, {}))


def _calls(process: WorkerProcess, min_run_seconds: float) -> int:
    """How many steps one timed run needs to last ``min_run_seconds`` (after a warm-up)."""
    process.ask({"steps": 2})
    return smallest_count(
        lambda count: process.ask({"steps": count})["seconds"] * count >= min_run_seconds)


# --- The machine's peak --------------------------------------------------------------------


def matmul_variants(n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """An ``n x n`` matrix product in jitted JAX, float32 and bfloat16: the variants to
    time, and XLA's count of each one's FLOPs."""
    import jax
    import jax.numpy as jnp

    from benchmarks.common import Variant

    rng = np.random.default_rng(SEED)
    product = jax.jit(lambda a, b: a @ b)
    variants, hlo_flops = {}, {}
    for dtype in ("float32", "bfloat16"):
        a = jnp.asarray(rng.standard_normal((n, n)), dtype)
        b = jnp.asarray(rng.standard_normal((n, n)), dtype)
        cost = product.lower(a, b).compile().cost_analysis()
        cost = cost[0] if isinstance(cost, list) else cost
        hlo_flops[dtype] = float(cost.get("flops", 0.0))
        variants[dtype] = Variant(lambda _, a=a, b=b: product(a, b))
    return variants, hlo_flops


# --- The whole benchmark -------------------------------------------------------------------


def run(quick: bool = False) -> dict[str, Any]:
    """Every trainer in its own process, timed in interleaved rounds; a JSON-ready dict."""
    import helpers

    repeat, min_run = (2, 0.02) if quick else (9, 0.5)
    names = ("jax", "pytorch_eager") if quick else TRAINERS + VARIANTS
    skipped = ({"pytorch_compiled": "skipped in a quick run (torch.compile takes a minute "
                                    "or more)"} | dict.fromkeys(VARIANTS, "skipped in a quick run")
               if quick else {})
    from benchmarks.common import calibrate

    n = MATMUL_N["quick" if quick else "full"]
    products, product_flops = matmul_variants(n)
    processes: dict[str, WorkerProcess] = {}
    with tempfile.TemporaryDirectory() as directory:
        setup = make_setup(quick, Path(directory))
        try:
            for name in names:  # one after the other, so that no two compile at once
                processes[name] = _worker(name, str(Path(directory) / "setup.json"))
                processes[name].hello = processes[name].read()
            failed = {n: p.hello["error"] for n, p in processes.items() if "error" in p.hello}
            working = [n for n in names if n not in failed]
            calls = {name: _calls(processes[name], min_run) for name in working}
            calls |= {f"matmul_{d}": calibrate(v, min_run) for d, v in products.items()}
            # The machine's peak is timed in the same rounds as the trainers, in this
            # process (the trainers' processes wait meanwhile), so that a busy spell of the
            # machine lowers the peak and the trainers alike.
            timed = [*working, *(f"matmul_{d}" for d in products)]
            runs: dict[str, list[float]] = {name: [] for name in timed}
            for r in range(repeat):
                k = r % len(timed)
                for name in timed[k:] + timed[:k]:
                    if name.startswith("matmul_"):
                        runs[name].append(products[name[7:]].run(calls[name]))
                    else:
                        runs[name].append(
                            processes[name].ask({"steps": calls[name]})["seconds"])
            profiles = {name: processes[name].ask({"profile": max(2, calls[name])})
                        for name in working}
        finally:
            for process in processes.values():
                process.close()

    peak: dict[str, Any] = {"n": n, "flops_per_call": 2 * n**3, "variants": {}}
    for dtype in products:
        timing = helpers.Timing(tuple(runs[f"matmul_{dtype}"]), calls[f"matmul_{dtype}"])
        peak["variants"][dtype] = {**timing_record(timing),
                                   "GFLOPs": 2 * n**3 / timing.median / 1e9,
                                   # the fastest round: the machine at its least busy
                                   "best_GFLOPs": 2 * n**3 / min(timing.per_call) / 1e9,
                                   "hlo_flops": product_flops[dtype]}
    flops = flops_per_token(setup["context"], vocab=setup["config"]["vocab_size"])
    one_layer = flops_per_token(setup["context"], layers=1,
                                vocab=setup["config"]["vocab_size"])["total"]
    peak_f32 = peak["variants"]["float32"]["GFLOPs"] * 1e9
    peak_bf16 = peak["variants"]["bfloat16"]["GFLOPs"] * 1e9
    results: dict[str, Any] = {}
    for name in (*TRAINERS, *VARIANTS):
        if name in skipped:
            results[name] = {"trainer": name, "skipped": skipped[name]}
            continue
        if name in failed:
            results[name] = {"trainer": name, "error": failed[name]}
            continue
        hello = processes[name].hello
        timing = helpers.Timing(tuple(runs[name]), calls[name])
        tokens = hello["tokens_per_step"]
        tokens_per_s = tokens / timing.median
        # Half the interquartile range of the runs' tokens per second.
        rates = sorted(tokens / s for s in runs[name])
        spread = (float(np.percentile(rates, 75)) - float(np.percentile(rates, 25))) / 2
        peak_used = peak_bf16 if name == "jax_bf16" else peak_f32
        best_peak = peak["variants"]["bfloat16" if name == "jax_bf16" else "float32"][
            "best_GFLOPs"] * 1e9
        record = {
            "trainer": name,
            "compute_dtype": "bfloat16" if name == "jax_bf16" else "float32",
            "environment": ENVIRONMENTS.get(name, {}),
            "tokens_per_step": tokens,
            "step": timing_record(timing),
            "tokens_per_s": tokens_per_s,
            "tokens_per_s_spread": spread,
            "mfu": flops["total"] * tokens_per_s / peak_used,
            # The fastest round of each, the trainer's and the peak's: on a machine shared
            # with other programs, closer to what it does alone than the medians.
            "best_tokens_per_s": tokens / min(runs[name]),
            "best_mfu": flops["total"] * tokens / min(runs[name]) / best_peak,
            "peak_used": "bfloat16" if name == "jax_bf16" else "float32",
            "compile_s": hello["compile_s"],
            "losses": hello["losses"],
            "threads": hello["threads"],
            "peak_rss_bytes": hello["peak_rss_bytes"],
            "profile": profiles[name] or None,
        }
        if hello["cost"]:
            cost = hello["cost"]
            record["hlo"] = {**cost, "flops_per_token": cost["hlo_flops"] / tokens,
                             "bytes_accessed_per_token": cost["hlo_bytes_accessed"] / tokens}
        results[name] = record
    return {
        "setup": {
            "config": setup["config"], "batch_size": setup["batch_size"],
            "tokens_per_step": setup["batch_size"] * setup["context"],
            "parameters": setup["parameters"], "windows": setup["windows"],
            "corpus_characters": setup["corpus_characters"],
            "optimizer": (f"clip global norm {CLIP_NORM}; AdamW, peak rate {PEAK_LR}, "
                          f"{WARMUP_STEPS} warm-up steps, cosine to {PEAK_LR / 10:g} at "
                          f"{TOTAL_STEPS}, weight decay {WEIGHT_DECAY} on the weight "
                          "matrices and embeddings"),
            "rms_epsilon": RMS_EPSILON, "gelu": "tanh approximation",
            "check_steps": setup["check_steps"], "pool_batches": setup["pool"],
            "repeat": repeat, "min_run_seconds": min_run,
            "threads": os.cpu_count(),
            "initial_weights": "the JAX model's (nnx.Rngs(0)), copied into every trainer",
            "skipped": skipped,
        },
        "flops_per_token": {**flops, "one_layer_total": one_layer},
        "matmul_peak": peak,
        "trainers": results,
        "check": check(results, flops, one_layer),
        "summary": summary(results),
    }


def check(results: dict[str, Any], flops: dict[str, int], one_layer: int) -> dict[str, Any]:
    """The ports against the JAX trainer: first-step losses, losses over the check steps,
    and the compiled step's FLOPs against the count."""
    ran = {n: r for n, r in results.items() if "losses" in r}
    reference = ran["jax"]["losses"]
    found: dict[str, Any] = {"first_step_loss": {n: r["losses"][0] for n, r in ran.items()},
                             "steps": len(reference), "max_abs_difference_vs_jax": {},
                             "first_step_abs_difference_vs_jax": {}}
    for name, r in ran.items():
        if name == "jax":
            continue
        found["first_step_abs_difference_vs_jax"][name] = abs(r["losses"][0] - reference[0])
        found["max_abs_difference_vs_jax"][name] = max(
            abs(a - b) for a, b in zip(r["losses"], reference, strict=True))
    hlo = ran["jax"].get("hlo")
    if hlo:
        # XLA's cost analysis counts a while loop's body once: nnx.scan's body is one block.
        found["hlo_flops_per_token_vs_one_layer_count"] = hlo["flops_per_token"] / one_layer
    if "jax_unrolled" in ran and "hlo" in ran["jax_unrolled"]:
        found["unrolled_hlo_flops_per_token_vs_count"] = (
            ran["jax_unrolled"]["hlo"]["flops_per_token"] / flops["total"])
    return found


def summary(results: dict[str, Any]) -> dict[str, Any]:
    """JAX's tokens per second against PyTorch's, and the MFUs."""
    rate = {n: r["tokens_per_s"] for n, r in results.items() if "tokens_per_s" in r}
    variants = [n for n in ("jax", *VARIANTS) if n in rate and n != "jax_bf16"]
    fastest = max(variants, key=rate.get)
    return {
        "lm_tokens_per_s": {n: rate[n] for n in rate},
        "lm_tokens_per_s_speedup_vs_pytorch_eager": rate["jax"] / rate["pytorch_eager"],
        "lm_tokens_per_s_speedup_vs_torch_compile":
            rate["jax"] / rate["pytorch_compiled"] if "pytorch_compiled" in rate else None,
        "lm_mfu": results["jax"]["mfu"],
        "lm_mfu_bf16": results["jax_bf16"]["mfu"] if "jax_bf16" in rate else None,
        # The fastest float32 JAX trainer, variants included, and its MFU.
        "lm_fastest_float32_jax": fastest,
        "lm_fastest_float32_jax_mfu": results[fastest]["mfu"],
        "lm_fastest_float32_jax_speedup_vs_torch_compile":
            rate[fastest] / rate["pytorch_compiled"] if "pytorch_compiled" in rate else None,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=TRAINERS + VARIANTS,
                        help="serve one trainer in this process (driven by run)")
    parser.add_argument("--setup", help="the set-up file the suite wrote")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a few runs")
    args = parser.parse_args(argv)
    if args.worker:
        serve(args.worker, args.setup)
    else:
        print(json.dumps(run(quick=args.quick), indent=1))


if __name__ == "__main__":
    main()
