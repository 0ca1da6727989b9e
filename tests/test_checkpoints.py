"""Unit tests of helpers.checkpoints: resuming after a fault, and failing loudly.

A resumed run must end exactly where an uninterrupted one does, and a checkpoint that is
missing, damaged or made for another model must raise, never lead to a fresh start.

Run as a script (``python tests/test_checkpoints.py DIRECTORY``), this file is the training
job that the fault test starts and kills part-way.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
import pytest
from flax.training import train_state

from helpers import XORDataset
from helpers.checkpoints import CheckpointError, Restored, restore_state, save_state
from helpers.models import MLPClassifier

ROOT = Path(__file__).resolve().parent.parent

MODEL = MLPClassifier()
INIT = jax.jit(MODEL.init)  # one compiled program, instead of many small eager ones
TX = optax.adam(1e-2)  # one optimizer object: every state below shares its compiled step
DATA = XORDataset(512, seed=0)
BATCH = 32
TOTAL = 60  # steps of a whole run
SAVE_EVERY = 20  # the job in a subprocess saves after steps 20 and 40...
KILLED_AT = 50  # ...and is killed after step 50, ten steps after its last checkpoint


def create_state(key: jax.Array) -> train_state.TrainState:
    params = INIT(key, jnp.ones((1, 2)))
    return train_state.TrainState.create(apply_fn=MODEL.apply, params=params, tx=TX)


@jax.jit
def train_step(state, x, y):
    def loss_fn(params):
        return optax.sigmoid_binary_cross_entropy(state.apply_fn(params, x), y).mean()

    return state.apply_gradients(grads=jax.grad(loss_fn)(state.params))


def batch_at(step: int) -> tuple[np.ndarray, np.ndarray]:
    """The batch of a given step: it depends on the step number alone, as resuming needs."""
    indices = np.random.default_rng([0, step]).choice(len(DATA), BATCH, replace=False)
    return DATA.data[indices], DATA.labels[indices]


def train(state, stop: int, directory: Path | None = None, die_at: int | None = None):
    """Train from ``state.step`` up to step ``stop``; optionally save, or die, on the way."""
    for step in range(int(state.step), stop):
        state = train_step(state, *batch_at(step))
        if directory is not None and (step + 1) % SAVE_EVERY == 0:
            save_state(directory, step + 1, state)
        if step + 1 == die_at:
            os.kill(os.getpid(), signal.SIGKILL)  # no clean-up of any kind, as in a crash
    return state


def assert_same_state(a, b) -> None:
    """Same step, parameters and optimizer state (Adam's count and moments)."""
    assert int(a.step) == int(b.step)
    leaves_a = jax.tree.leaves((a.params, a.opt_state))
    leaves_b = jax.tree.leaves((b.params, b.opt_state))
    assert len(leaves_a) == len(leaves_b) == 4 + 9
    for x, y in zip(leaves_a, leaves_b, strict=True):
        if jax.default_backend() == "cpu":
            # Exact equality, not allclose: the checkpoint holds the exact float32 values of
            # the whole state, the data order depends on the step number only, and on the
            # CPU the same compiled step applied to the same inputs performs the same
            # floating-point operations in the same order, in any process.
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        else:  # some GPU kernels sum in an order that varies from run to run
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-7)


@pytest.fixture(scope="module")
def straight():
    """A run of TOTAL steps without interruption."""
    return train(create_state(jax.random.key(0)), TOTAL)


@pytest.fixture
def saved(tmp_path):
    """A directory with one checkpoint, step 3, of a short run; and that run's state."""
    state = train(create_state(jax.random.key(0)), 3)
    save_state(tmp_path / "run", 3, state)
    return tmp_path / "run", state


def fresh() -> train_state.TrainState:
    """A state to restore into, initialized from another key: its values must all be replaced."""
    return create_state(jax.random.key(42))


# --- resuming after an interruption --------------------------------------------------------


def test_resumed_run_ends_like_an_uninterrupted_one(tmp_path, straight):
    first = train(create_state(jax.random.key(0)), TOTAL // 2)
    save_state(tmp_path, TOTAL // 2, first)
    del first  # from here on, only the checkpoint connects the two halves

    step, resumed = restore_state(tmp_path, fresh())
    assert step == int(resumed.step) == TOTAL // 2
    assert_same_state(train(resumed, TOTAL), straight)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_run_killed_in_another_process_resumes_from_its_last_checkpoint(tmp_path, straight):
    job = subprocess.run([sys.executable, __file__, str(tmp_path)], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert job.returncode == -signal.SIGKILL, job.stderr  # it really died mid-run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["20", "40"]

    step, resumed = restore_state(tmp_path, fresh())
    assert step == 40  # the ten steps after it are lost, and done again below
    assert_same_state(train(resumed, TOTAL), straight)


def test_a_resumed_run_really_depends_on_the_checkpoint(straight):
    # The check above would be void if the fresh state happened to train to the same end.
    assert not np.array_equal(jax.tree.leaves(train(fresh(), TOTAL).params)[0],
                              jax.tree.leaves(straight.params)[0])


def test_normal_use_prints_nothing(tmp_path, capfd):
    state = train(create_state(jax.random.key(0)), 2)
    capfd.readouterr()
    save_state(tmp_path, 2, state)
    restore_state(tmp_path, fresh())
    assert capfd.readouterr() == ("", "")


def test_restore_into_an_abstract_target_and_a_chosen_step(saved):
    directory, state = saved
    later = train(state, 5)
    save_state(directory, 5, later)
    abstract = jax.eval_shape(lambda: create_state(jax.random.key(1)))
    restored = restore_state(directory, abstract, step=3)
    assert isinstance(restored, Restored) and restored.step == 3
    assert_same_state(restored.state, state)
    assert_same_state(restore_state(directory, abstract).state, later)  # the newest by default


def test_restores_a_checkpoint_written_by_plain_orbax(tmp_path):
    state = train(create_state(jax.random.key(0)), 2)
    with ocp.CheckpointManager(tmp_path) as manager:  # as the chapter writes it
        manager.save(2, args=ocp.args.StandardSave(state))
    assert_same_state(restore_state(tmp_path, fresh()).state, state)


def test_max_to_keep_deletes_the_oldest(tmp_path):
    state = create_state(jax.random.key(0))
    for step in (1, 2, 3):
        save_state(tmp_path, step, state, max_to_keep=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2", "3"]


# --- nothing to restore: FileNotFoundError, never a fresh start -----------------------------


def test_missing_directory(tmp_path):
    missing = tmp_path / "no-such-run"
    with pytest.raises(FileNotFoundError, match=f"{missing} does not exist"):
        restore_state(missing, fresh())
    assert not missing.exists()  # Orbax alone would have created it


def test_empty_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no finished checkpoint") as caught:
        restore_state(tmp_path, fresh())
    assert str(tmp_path) in str(caught.value)


def test_missing_step_names_the_steps_found(saved):
    directory, _ = saved
    with pytest.raises(FileNotFoundError, match=r"no checkpoint for step 7 in .*found: \[3\]"):
        restore_state(directory, fresh(), step=7)


def test_an_unfinished_save_is_ignored_and_reported(saved):
    directory, state = saved
    (directory / "9.orbax-checkpoint-tmp").mkdir()  # what a save killed half-way leaves
    assert restore_state(directory, fresh()).step == 3
    with pytest.raises(FileNotFoundError, match=r"unfinished saves: \['9.orbax-checkpoint-tmp'\]"):
        restore_state(directory, fresh(), step=9)


# --- a damaged checkpoint: CheckpointError --------------------------------------------------


def _data_files(step_dir: Path) -> list[Path]:
    """The files of the array store (OCDBT keeps them in folders named d)."""
    files = sorted(p for p in (step_dir / "default").rglob("*")
                   if p.is_file() and p.parent.name == "d")
    assert files, "no array data files found: has Orbax's layout changed?"
    return files


def _delete_data(step_dir: Path) -> None:
    for path in _data_files(step_dir):
        path.unlink()


def _truncate_data(step_dir: Path) -> None:
    for path in _data_files(step_dir):
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_a_bit(step_dir: Path) -> None:
    for path in _data_files(step_dir):
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 1
        path.write_bytes(bytes(data))


def _delete_metadata(step_dir: Path) -> None:
    (step_dir / "default" / "_METADATA").unlink()


def _truncate_metadata(step_dir: Path) -> None:
    (step_dir / "default" / "_METADATA").write_text("{")


def _delete_state(step_dir: Path) -> None:
    shutil.rmtree(step_dir / "default")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_delete_data, "is damaged: ValueError"),  # TensorStore's error, quoted
        (_truncate_data, "is damaged: ValueError"),
        (_flip_a_bit, "is damaged: ValueError"),
        (_delete_metadata, "it has no default/_METADATA$"),
        (_truncate_metadata, "Orbax cannot read it .JSONDecodeError"),
        (_delete_state, "it has no default/$"),
    ],
    ids=["data deleted", "data truncated", "bit flipped", "metadata deleted",
         "metadata truncated", "state deleted"],
)
def test_damaged_checkpoint(saved, capfd, damage, message):
    directory, _ = saved
    damage(directory / "3")
    capfd.readouterr()
    with pytest.raises(CheckpointError, match=message) as caught:
        restore_state(directory, fresh())
    assert caught.value.path == directory / "3"
    assert f"checkpoint {directory / '3'} is damaged" in str(caught.value)
    assert capfd.readouterr() == ("", "")  # one clear error, no tracebacks from Orbax's threads


def test_corrupted_values_are_caught_by_their_digest(tmp_path):
    # Large arrays are stored apart from the index, without a checksum: Orbax would restore
    # the flipped bit as a wrong value. The digest recorded by save_state catches it.
    tree = {"w": jax.random.normal(jax.random.key(0), (100_000,))}
    save_state(tmp_path, 1, tree)
    largest = max(_data_files(tmp_path / "1"), key=lambda path: path.stat().st_size)
    data = bytearray(largest.read_bytes())
    data[len(data) // 2] ^= 1
    largest.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"values of w read back differ .*SHA-256"):
        restore_state(tmp_path, tree)


# --- a checkpoint made for something else: CheckpointError ----------------------------------


def _other_optimizer():
    state = fresh()
    return train_state.TrainState.create(apply_fn=state.apply_fn, params=state.params,
                                         tx=optax.sgd(0.1))


def _half_precision():
    state = fresh()
    return state.replace(params=jax.tree.map(lambda x: x.astype(jnp.float16), state.params))


def _wider_model():
    model = MLPClassifier(hidden=16)
    return train_state.TrainState.create(
        apply_fn=model.apply, params=model.init(jax.random.key(0), jnp.ones((1, 2))), tx=TX)


@pytest.mark.parametrize(
    ("make_target", "message"),
    [
        (_wider_model, r"hidden.kernel: shape \(2, 8\) in the checkpoint, \(2, 16\) in the target"),
        (lambda: {"step": 0, "params": fresh().params, "opt_state": fresh().opt_state,
                  "extra": jnp.zeros(3)},
         "extra: in the target, not in the checkpoint"),
        (lambda: {"step": 0, "params": fresh().params},
         "opt_state.0.count: in the checkpoint, not in the target"),
        (_other_optimizer, "opt_state.0.mu.params.hidden.bias: in the checkpoint, not in the"),
        (_half_precision, "hidden.kernel: dtype float32 in the checkpoint, float16 in the target"),
    ],
    ids=["wider model", "extra key", "missing keys", "other optimizer", "other dtype"],
)
def test_mismatched_target(saved, make_target, message):
    directory, _ = saved
    with pytest.raises(CheckpointError, match="does not match the target") as caught:
        restore_state(directory, make_target())
    assert caught.value.path == directory / "3"
    assert re.search(message, str(caught.value)), str(caught.value)


# --- arguments and saving -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda d, s: save_state(d, -1, s), ValueError, "step must be non-negative"),
        (lambda d, s: save_state(d, 1.0, s), TypeError, "step must be an int"),
        (lambda d, s: save_state(d, True, s), TypeError, "step must be an int"),
        (lambda d, s: restore_state(d, s, step="3"), TypeError, "step must be an int"),
        (lambda d, s: restore_state(d, s, step=-2), ValueError, "step must be non-negative"),
        (lambda d, s: save_state(3, 1, s), TypeError, "directory must be a str or a path"),
        (lambda d, s: restore_state(b"/tmp", s), TypeError, "directory must be a str or a path"),
        (lambda d, s: restore_state("", s), ValueError, "directory must not be empty"),
        (lambda d, s: save_state(d / "3" / "_CHECKPOINT_METADATA", 1, s), NotADirectoryError,
         "is a file"),
        (lambda d, s: restore_state(d, None), TypeError, "target must be the pytree"),
        (lambda d, s: save_state(d, 4, {}), ValueError, "state has no arrays"),
        (lambda d, s: save_state(d, 4, jax.eval_shape(lambda: s)), TypeError, "abstract arrays"),
        (lambda d, s: save_state(d, 4, s, max_to_keep=0), ValueError, "max_to_keep must be at"),
        (lambda d, s: save_state(d, 4, s, max_to_keep="2"), TypeError, "max_to_keep must be an"),
        (lambda d, s: save_state(d, 3, s), FileExistsError, "already holds a checkpoint for step"),
        (lambda d, s: save_state(d, 2, s), ValueError, "older than the newest checkpoint"),
    ],
)
def test_bad_arguments(saved, call, error, message):
    directory, state = saved
    with pytest.raises(error, match=message):
        call(directory, state)
    assert sorted(p.name for p in directory.iterdir()) == ["3"]  # nothing was written


def test_import_helpers_does_not_import_orbax():
    code = "import sys, helpers; print('orbax.checkpoint' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert result.stdout.strip() == "False", result.stderr


if __name__ == "__main__":  # the job that the fault test runs and kills
    train(create_state(jax.random.key(0)), TOTAL, directory=Path(sys.argv[1]), die_at=KILLED_AT)
    sys.exit("not killed")  # unreachable: the test checks that the job died by SIGKILL
