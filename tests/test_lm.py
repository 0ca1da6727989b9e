"""Unit tests of helpers.lm, the language model of chapter 15 (tiny configurations)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from helpers.lm import (
    GPT,
    CharTokenizer,
    GPTConfig,
    TokenWindows,
    adamw_warmup_cosine,
    decay_mask,
    load_corpus,
    train_step,
)

TINY = GPTConfig(vocab_size=11, context=8, layers=2, d_model=16, heads=4)


@nnx.jit(static_argnames=("config", "seed"))
def _create(config, seed):  # compiled: creating a model op by op is slow
    return GPT(config, rngs=nnx.Rngs(seed))


@nnx.jit
def _apply(model, tokens, cache=None, start=0):
    return model(tokens, cache, start)


@pytest.fixture(scope="module")
def model():
    return _create(TINY, 0)


def _names(path):
    return "/".join(str(key.key) for key in path if isinstance(key, jax.tree_util.DictKey))


def test_the_corpus_ships_with_helpers():
    text = load_corpus()
    assert len(text) > 100_000 and text.startswith("# ")


def test_tokenizer_round_trip_and_sorted_ids():
    tokenizer = CharTokenizer("hello, world")
    assert tokenizer.chars == sorted(set("hello, world"))
    assert tokenizer.vocab_size == len(set("hello, world"))
    ids = tokenizer.encode("world, hello")
    assert ids.dtype == np.int32
    assert tokenizer.decode(ids) == "world, hello"
    assert tokenizer.decode(jnp.asarray(ids)) == "world, hello"  # JAX arrays decode too
    assert tokenizer.encode(" ").tolist() == [0]  # the space sorts first here


def test_tokenizer_rejects_unknown_characters():
    tokenizer = CharTokenizer("abc")
    with pytest.raises(ValueError, match=r"not in the vocabulary: \['x', 'z'\]"):
        tokenizer.encode("abzx")


def test_token_windows_length_contents_and_index_error():
    tokens = np.arange(20)
    windows = TokenWindows(tokens, context=4)
    assert len(windows) == 4  # windows start at 0, 4, 8, 12; each holds 5 tokens
    assert windows[0].tolist() == [0, 1, 2, 3, 4]
    assert windows[3].tolist() == [12, 13, 14, 15, 16]
    assert windows[1].dtype == np.int32
    with pytest.raises(IndexError, match="window 4 of 4"):
        windows[4]
    with pytest.raises(IndexError):
        windows[-1]
    overlapping = TokenWindows(tokens, context=4, stride=1)
    assert len(overlapping) == 16 and overlapping[15].tolist() == [15, 16, 17, 18, 19]


def test_token_windows_rejects_too_short_a_text():
    with pytest.raises(ValueError, match="too few"):
        TokenWindows(np.arange(4), context=4)


def test_config_rejects_heads_that_do_not_divide_the_width():
    with pytest.raises(ValueError, match="multiple"):
        GPTConfig(vocab_size=11, d_model=16, heads=3)


def test_model_shapes_and_parameter_count(model):
    params = nnx.state(model, nnx.Param)
    shapes = jax.tree.map(jnp.shape, nnx.to_pure_dict(params))
    assert shapes["blocks"]["attention"]["qkv"]["kernel"] == (2, 16, 48)
    assert shapes["blocks"]["up"]["kernel"] == (2, 16, 64)
    assert shapes["head"]["kernel"] == (16, 11)
    assert shapes["positions"]["embedding"] == (8, 16)
    d, r, v, t, layers = 16, 4, 11, 8, 2
    expected = layers * ((4 + 2 * r) * d**2 + (r + 3) * d) + (2 * v + t + 1) * d
    assert sum(leaf.size for leaf in jax.tree.leaves(params)) == expected
    logits = _apply(model, jnp.zeros((1, 7), jnp.int32))
    assert logits.shape == (1, 7, 11) and logits.dtype == jnp.float32
    with pytest.raises(ValueError, match="exceed the context"):
        model(jnp.zeros((1, 9), jnp.int32))


def test_bfloat16_compute_keeps_float32_parameters_and_logits():
    model = nnx.eval_shape(lambda: GPT(dataclasses.replace(TINY, dtype=jnp.bfloat16),
                                       rngs=nnx.Rngs(0)))
    tokens = jnp.zeros((1, 3), jnp.int32)
    assert model.blocks.up.kernel.dtype == jnp.float32
    assert nnx.eval_shape(lambda m: m.tokens(tokens), model).dtype == jnp.bfloat16
    assert nnx.eval_shape(lambda m: m(tokens), model).dtype == jnp.float32


def test_causal_the_future_does_not_change_the_past(model):
    tokens = jnp.array([[1, 2, 3, 4, 5, 6, 7]])
    original, changed = _apply(model, tokens), _apply(model, tokens.at[0, 4:].set(9))
    assert jnp.allclose(original[:, :4], changed[:, :4], atol=1e-6)
    assert not jnp.allclose(original[:, 4:], changed[:, 4:])


def test_the_cache_path_equals_the_full_forward(model):
    tokens = jnp.array([[3, 1, 4, 1, 5, 9, 2]])
    full = _apply(model, tokens)
    cache = model.init_cache(1)
    assert [c.shape for c in cache] == [(2, 1, 8, 4, 4)] * 2
    prefill, cache = _apply(model, tokens[:, :4], cache, 0)
    pieces = [prefill]
    for position in range(4, 7):  # then one token at a time
        logits, cache = _apply(model, tokens[:, position : position + 1], cache, position)
        pieces.append(logits)
    assert jnp.allclose(jnp.concatenate(pieces, axis=1), full, atol=1e-5)


def test_decay_mask_picks_kernels_and_embeddings_only(model):
    params = nnx.state(model, nnx.Param)
    for view in (params, nnx.as_pure(params)):  # Variables (paths end in .value), arrays
        mask = decay_mask(view)
        decayed = {_names(path) for path, flag in jax.tree.leaves_with_path(mask) if flag}
        assert decayed == {
            "blocks/attention/qkv/kernel", "blocks/attention/out/kernel",
            "blocks/up/kernel", "blocks/down/kernel", "head/kernel",
            "tokens/embedding", "positions/embedding",
        }
        kept = {_names(path) for path, flag in jax.tree.leaves_with_path(mask) if not flag}
        assert kept == {"blocks/attention_norm/scale", "blocks/mlp_norm/scale",
                        "blocks/up/bias", "blocks/down/bias", "norm/scale"}


def test_a_few_train_steps_lower_the_loss():
    model = _create(TINY, 1)
    optimizer = nnx.Optimizer(model, adamw_warmup_cosine(20, peak_lr=1e-2, warmup_steps=2),
                              wrt=nnx.Param)
    windows = jnp.tile(jnp.arange(9) % TINY.vocab_size, (4, 1))  # a repeated pattern
    losses = [float(train_step(model, optimizer, windows)) for _ in range(20)]
    assert losses[0] == pytest.approx(np.log(TINY.vocab_size), abs=0.05)  # untrained
    assert losses[-1] < 0.5 * losses[0]
    assert int(optimizer.step[...]) == 20
