"""The small language model of Part V: its text, its data pipeline and its transformer.

Defined in ``book/15_language_model.ipynb``: ``load_corpus`` and ``CharTokenizer`` in
section "The text and its tokens", ``TokenWindows`` in section "Batches from a
DataLoader", ``GPTConfig``, ``CausalSelfAttention``, ``Block`` and ``GPT`` in section
"The model", and ``next_token_loss``, ``decay_mask``, ``adamw_warmup_cosine`` and
``train_step`` in section "Training". The code is the chapter's, unchanged
(``tests/test_helpers_are_the_chapters_code.py`` checks it). The chapter "Training at
scale" imports it as ``from helpers.lm import GPT, GPTConfig, ...``; it is not
re-exported from ``helpers`` so that chapters which do not use Flax do not import it.

The parameters can carry *logical* axis names (``"embed"``, ``"heads"``, ``"mlp"``,
``"vocab"``, ``"layers"``) as sharding annotations (``GPTConfig(logical_axes=True)``);
the chapter "Training at scale" maps them to the axes of a device mesh.
"""

import dataclasses
import importlib.resources

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

__all__ = [
    "GPT",
    "Block",
    "CausalSelfAttention",
    "CharTokenizer",
    "GPTConfig",
    "TokenWindows",
    "adamw_warmup_cosine",
    "decay_mask",
    "load_corpus",
    "next_token_loss",
    "train_step",
]


def load_corpus():
    """The training text: the prose of this book's chapters, as one string (shipped with
    ``helpers``, so nothing is downloaded)."""
    corpus = importlib.resources.files("helpers").joinpath("corpus.txt")
    return corpus.read_text("utf-8")


class CharTokenizer:
    """One token per character of the text it is built from; ids in sorted order."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.ids = {char: i for i, char in enumerate(self.chars)}

    @property
    def vocab_size(self):
        return len(self.chars)

    def encode(self, text):
        unknown = sorted(set(text) - self.ids.keys())
        if unknown:
            raise ValueError(f"characters not in the vocabulary: {unknown}")
        return np.array([self.ids[char] for char in text], dtype=np.int32)

    def decode(self, ids):
        return "".join(self.chars[i] for i in np.asarray(ids).tolist())


class TokenWindows:
    """A map-style dataset: window ``i`` is ``context + 1`` tokens starting at
    ``i * stride``; the model reads the first ``context`` and predicts the last
    ``context``."""

    def __init__(self, tokens, context, stride=None):
        self.tokens = np.asarray(tokens, dtype=np.int32)
        self.context = context
        self.stride = stride or context
        if len(self.tokens) < context + 1:
            raise ValueError(
                f"{len(self.tokens)} tokens are too few for context {context}")

    def __len__(self):
        return (len(self.tokens) - self.context - 1) // self.stride + 1

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"window {index} of {len(self)}")
        start = index * self.stride
        return self.tokens[start : start + self.context + 1]


@dataclasses.dataclass(frozen=True)
class GPTConfig:
    vocab_size: int
    context: int = 128  # the longest sequence the model reads
    layers: int = 2
    d_model: int = 64
    heads: int = 4
    mlp_ratio: int = 4
    dtype: jnp.dtype = jnp.float32  # what the layers compute in
    param_dtype: jnp.dtype = jnp.float32  # what the parameters are stored in
    # Give every parameter logical axis names (the chapter "Training at scale" maps
    # them to a mesh); Flax then shards each parameter as it is created, under a mesh.
    logical_axes: bool = False

    def __post_init__(self):
        if self.d_model % self.heads:
            raise ValueError(
                f"d_model {self.d_model} is not a multiple of {self.heads} heads")


def _init(config, init, names):
    """``init``; its parameters carry the logical axis ``names`` if the config asks."""
    return nnx.with_partitioning(init, names) if config.logical_axes else init


def _normal(config, std, names):
    return _init(config, nnx.initializers.normal(std), names)


class CausalSelfAttention(nnx.Module):
    def __init__(self, config, *, rngs):
        self.heads = config.heads
        d = config.d_model
        kwargs = dict(use_bias=False, dtype=config.dtype,
                      param_dtype=config.param_dtype, rngs=rngs)
        self.qkv = nnx.Linear(
            d, 3 * d, kernel_init=_normal(config, 0.02, ("embed", "heads")), **kwargs)
        out_std = 0.02 / (2 * config.layers) ** 0.5  # GPT-2: residual branches small
        self.out = nnx.Linear(
            d, d, kernel_init=_normal(config, out_std, ("heads", "embed")), **kwargs)

    def __call__(self, x, cache=None, start=0):
        batch, time, d = x.shape
        q, k, v = jnp.split(self.qkv(x), 3, axis=-1)  # each (batch, time, d)
        q, k, v = (a.reshape(batch, time, self.heads, d // self.heads)
                   for a in (q, k, v))
        if cache is None:  # training: every position attends to itself and those before
            y = jax.nn.dot_product_attention(q, k, v, is_causal=True)
        else:  # generation: keys and values of positions < start are in the cache
            k = jax.lax.dynamic_update_slice(cache[0], k.astype(cache[0].dtype),
                                             (0, start, 0, 0))
            v = jax.lax.dynamic_update_slice(cache[1], v.astype(cache[1].dtype),
                                             (0, start, 0, 0))
            cache = (k, v)
            positions = start + jnp.arange(time)
            mask = jnp.arange(k.shape[1])[None, :] <= positions[:, None]  # (time, slot)
            y = jax.nn.dot_product_attention(q, k.astype(q.dtype), v.astype(q.dtype),
                                             mask=mask)
        return self.out(y.reshape(batch, time, d)), cache


class Block(nnx.Module):
    def __init__(self, config, *, rngs):
        d, hidden = config.d_model, config.mlp_ratio * config.d_model
        norm = dict(dtype=config.dtype, param_dtype=config.param_dtype, rngs=rngs,
                    scale_init=_init(config, nnx.initializers.ones, ("embed",)))
        dense = dict(dtype=config.dtype, param_dtype=config.param_dtype, rngs=rngs)
        self.attention_norm = nnx.RMSNorm(d, **norm)
        self.attention = CausalSelfAttention(config, rngs=rngs)
        self.mlp_norm = nnx.RMSNorm(d, **norm)
        self.up = nnx.Linear(
            d, hidden, kernel_init=_normal(config, 0.02, ("embed", "mlp")),
            bias_init=_init(config, nnx.initializers.zeros, ("mlp",)), **dense)
        out_std = 0.02 / (2 * config.layers) ** 0.5
        self.down = nnx.Linear(
            hidden, d, kernel_init=_normal(config, out_std, ("mlp", "embed")),
            bias_init=_init(config, nnx.initializers.zeros, ("embed",)), **dense)

    def __call__(self, x, cache=None, start=0):
        y, cache = self.attention(self.attention_norm(x), cache, start)
        x = x + y  # pre-norm residual blocks: x + f(norm(x))
        x = x + self.down(jax.nn.gelu(self.up(self.mlp_norm(x))))
        return x, cache


class GPT(nnx.Module):
    """A decoder-only transformer: token and position embeddings, ``config.layers``
    blocks stacked on a leading axis and applied with ``nnx.scan``, a final norm, and a
    linear head that gives one logit per token of the vocabulary."""

    def __init__(self, config, *, rngs):
        self.config = config
        d = config.d_model
        embed = dict(dtype=config.dtype, param_dtype=config.param_dtype, rngs=rngs)
        self.tokens = nnx.Embed(
            config.vocab_size, d,
            embedding_init=_normal(config, 0.02, ("vocab", "embed")), **embed)
        self.positions = nnx.Embed(
            config.context, d, embedding_init=_normal(config, 0.01, (None, "embed")),
            **embed)

        @nnx.split_rngs(splits=config.layers)
        @nnx.vmap(in_axes=0, out_axes=0,
                  transform_metadata={nnx.PARTITION_NAME: "layers"})
        def make_blocks(rngs):
            return Block(config, rngs=rngs)

        self.blocks = make_blocks(rngs)  # each parameter gains a leading axis: layers
        self.norm = nnx.RMSNorm(
            d, dtype=config.dtype, param_dtype=config.param_dtype, rngs=rngs,
            scale_init=_init(config, nnx.initializers.ones, ("embed",)))
        self.head = nnx.Linear(
            d, config.vocab_size, use_bias=False,
            kernel_init=_normal(config, 0.02, ("embed", "vocab")), **embed)

    def __call__(self, tokens, cache=None, start=0):
        """Logits (float32) for each position of ``tokens`` ``(batch, time)``; with a
        ``cache`` (see ``init_cache``), ``tokens`` sit at positions ``start, start + 1,
        ...`` and the result is ``(logits, cache)``, the cache holding their keys and
        values too."""
        time = tokens.shape[1]
        if time > self.config.context:  # the position table has `context` rows
            raise ValueError(f"{time} tokens exceed the context, {self.config.context}")
        x = self.tokens(tokens) + self.positions(start + jnp.arange(time))

        @nnx.scan(in_axes=(nnx.Carry, 0, 0), out_axes=(nnx.Carry, 0),
                  transform_metadata={nnx.PARTITION_NAME: "layers"})
        def run_blocks(x, block, layer_cache):
            return block(x, layer_cache, start)

        x, cache = run_blocks(x, self.blocks, cache)
        logits = self.head(self.norm(x)).astype(jnp.float32)  # the loss in float32
        return logits if cache is None else (logits, cache)

    def init_cache(self, batch, dtype=None):
        """Empty keys and values for every layer and position: two arrays of shape
        ``(layers, batch, context, heads, d_model // heads)``."""
        c = self.config
        shape = (c.layers, batch, c.context, c.heads, c.d_model // c.heads)
        zeros = jnp.zeros(shape, dtype or c.dtype)
        return (zeros, zeros)


def next_token_loss(model, windows):
    """Mean cross-entropy of predicting token ``t + 1`` from tokens ``0..t`` of each
    window."""
    logits = model(windows[:, :-1])
    labels = windows[:, 1:]
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def decay_mask(params):
    """True for the weight matrices (kernels and embeddings), False for norm scales and
    biases. A path into NNX state can end in the Variable's ``value``: the last name
    before it says what the parameter is."""

    def decays(path, _):
        names = [key.key for key in path if isinstance(key, jax.tree_util.DictKey)]
        return names[-1] in ("kernel", "embedding")

    return jax.tree.map_with_path(decays, params)


def adamw_warmup_cosine(total_steps, peak_lr=3e-3, warmup_steps=50, weight_decay=0.1,
                        clip_norm=1.0):
    """AdamW whose learning rate rises linearly for ``warmup_steps`` and then follows a
    cosine down to a tenth of ``peak_lr``, after clipping the gradient's global norm;
    weight decay only where ``decay_mask`` says."""
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, peak_lr, warmup_steps, total_steps, end_value=peak_lr / 10)
    return optax.chain(
        optax.clip_by_global_norm(clip_norm),
        optax.adamw(schedule, weight_decay=weight_decay, mask=decay_mask),
    )


@nnx.jit
def train_step(model, optimizer, windows):
    """One step on a batch of windows: the loss before the update; updates in place."""
    loss, grads = nnx.value_and_grad(next_token_loss)(model, windows)
    optimizer.update(model, grads)
    return loss
