"""Saving and restoring a training state with Orbax (chapter 11, "Training with Optax").

The chapter makes the Orbax calls in the open; this module packages them with the checks a
resumed run needs. Import it as ``from helpers.checkpoints import save_state, restore_state``;
it is not re-exported from ``helpers``, so that ``import helpers`` does not import Orbax.

Left to itself, Orbax (0.12.8, the version this book pins):

- creates the directory it is pointed at, and ``latest_step()`` of an empty or missing
  directory is ``None``, which a loop easily reads as "start from scratch";
- answers a request for a step it does not have with an unrelated ``ValueError`` (about
  ``Composite`` arguments), and silently skips a save of a step that exists or is older
  than the newest one;
- casts arrays to the target's dtype without a word, and restores values from a damaged
  array file without noticing when the damage is inside the values themselves.

Here restoring never falls back to a fresh start: a missing directory, checkpoint or step
raises :class:`FileNotFoundError`, and a checkpoint that is damaged or does not fit the
target raises :class:`CheckpointError`. :func:`save_state` also records a SHA-256 digest of
each array, and :func:`restore_state` compares the values it reads with them, so a corrupted
value cannot pass for a resumed run.
"""

from __future__ import annotations

import hashlib
import numbers
import os
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import tensorstore as ts

__all__ = ["CheckpointError", "Restored", "restore_state", "save_state"]

_DIGESTS = "helpers.checkpoints.sha256"  # the key of our entry in Orbax's custom metadata
_UNFINISHED = ".orbax-checkpoint-tmp"  # how Orbax names a step directory still being written
_MAX_PROBLEMS = 8  # differences listed in a mismatch message


class CheckpointError(RuntimeError):
    """A checkpoint exists but cannot be used: it is damaged or does not fit the target.

    ``path`` is the step directory concerned. The underlying Orbax or TensorStore error,
    if any, is chained as ``__cause__`` and summarized in the message.
    """

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


class Restored[T](NamedTuple):
    """What :func:`restore_state` returns: the step it restored, and the restored state."""

    step: int
    state: T


# --- argument checks --------------------------------------------------------------------


def _directory(directory: Any) -> Path:
    if isinstance(directory, bytes) or not isinstance(directory, str | os.PathLike):
        raise TypeError(
            f"directory must be a str or a path, got {directory!r} ({type(directory).__name__})"
        )
    if not str(directory):
        raise ValueError("directory must not be empty")
    path = Path(directory).expanduser().absolute()  # Orbax wants absolute paths
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{path} is a file, not a checkpoint directory")
    return path


def _step(step: Any) -> int:
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise TypeError(f"step must be an int, got {step!r} ({type(step).__name__})")
    if step < 0:
        raise ValueError(f"step must be non-negative, got {step}")
    return int(step)


def _leaves(tree: Any, name: str) -> list[Any]:
    leaves = jax.tree.leaves(tree)
    if not leaves:
        raise ValueError(f"{name} has no arrays: there is nothing to save or restore")
    return leaves


# --- what a checkpoint holds --------------------------------------------------------------


def _flat(tree: Any) -> dict[str, Any]:
    """The leaves of ``tree`` keyed by their path as Orbax names them on disk, in tree order.

    For a ``TrainState``: ``step``, ``params.params.hidden.bias``, ..., ``opt_state.0.count``...
    """
    flat: dict[str, Any] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                walk(child, (*path, str(key)))
        elif isinstance(node, list | tuple):
            for index, child in enumerate(node):
                walk(child, (*path, str(index)))
        elif node is not None:  # None marks an empty node, such as optax's EmptyState
            flat[".".join(path)] = node

    walk(ocp.tree.serialize_tree(tree, keep_empty_nodes=True), ())
    return flat


def _digest(value: Any) -> tuple[str, str]:
    """(dtype name, SHA-256 of dtype, shape and bytes) of one leaf, read on the host."""
    array = np.ascontiguousarray(jax.device_get(value))
    sha = hashlib.sha256(f"{array.dtype}{array.shape}".encode())
    sha.update(array.tobytes())
    return str(array.dtype), sha.hexdigest()


def _steps_message(path: Path, steps: list[int]) -> str:
    found = f"steps found: {steps}" if steps else "it holds no finished checkpoint"
    unfinished = sorted(p.name for p in path.iterdir() if _UNFINISHED in p.name)
    if unfinished:
        found += f" (ignored, unfinished saves: {unfinished})"
    return found


def _describe(error: BaseException) -> str:
    """A short form of an Orbax or TensorStore error: type and first line, without specs."""
    lines = str(error).strip().splitlines() or [""]
    line = lines[0].split(" [tensorstore_spec")[0]
    if len(line) > 300:
        line = line[:300] + "..."
    return f"{type(error).__name__}: {line}"


def _manager(path: Path, *, create: bool, max_to_keep: int | None = None) -> Any:
    options = ocp.CheckpointManagerOptions(create=create, max_to_keep=max_to_keep)
    # One unnamed item, as `manager.save(step, args=ocp.args.StandardSave(...))` writes.
    handler = ocp.StandardCheckpointHandler()
    return ocp.CheckpointManager(path, options=options, item_handlers=handler)


# --- save -------------------------------------------------------------------------------


def save_state(
    directory: str | os.PathLike[str], step: int, state: Any, *, max_to_keep: int | None = None
) -> Path:
    """Save the pytree ``state`` (a ``TrainState``, a dict of arrays...) as checkpoint ``step``.

    The checkpoint is ``directory/<step>``, written with ``ocp.CheckpointManager`` and
    ``ocp.args.StandardSave``, together with a SHA-256 digest of every array. The function
    returns the step directory once the save has finished (Orbax writes in the background;
    this waits). ``max_to_keep`` deletes the oldest checkpoints beyond that many.

    Raises ``FileExistsError`` if the step is already saved and ``ValueError`` if it is older
    than the newest checkpoint (Orbax would skip both silently), ``CheckpointError`` if
    Orbax fails.
    """
    path = _directory(directory)
    step = _step(step)
    if max_to_keep is not None:
        if isinstance(max_to_keep, bool) or not isinstance(max_to_keep, numbers.Integral):
            raise TypeError(f"max_to_keep must be an int or None, got {max_to_keep!r}")
        if max_to_keep < 1:
            raise ValueError(f"max_to_keep must be at least 1, got {max_to_keep}")
        max_to_keep = int(max_to_keep)
    if any(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in _leaves(state, "state")):
        raise TypeError("state holds abstract arrays (jax.ShapeDtypeStruct): save needs values")
    digests = {key: _digest(leaf) for key, leaf in _flat(state).items()}

    with _manager(path, create=True, max_to_keep=max_to_keep) as manager:
        steps = list(manager.all_steps())
        if step in steps:
            raise FileExistsError(
                f"{path} already holds a checkpoint for step {step}: choose another step"
            )
        if steps and step < max(steps):
            raise ValueError(
                f"step {step} is older than the newest checkpoint in {path} (step {max(steps)}); "
                "save into a new directory to start a new run"
            )
        args = ocp.args.StandardSave(state, custom_metadata={_DIGESTS: digests})
        try:
            saved = manager.save(step, args=args)
            manager.wait_until_finished()
        except Exception as error:
            raise CheckpointError(
                f"could not save step {step} to {path}: {_describe(error)}", path / str(step)
            ) from error
    if not saved:
        raise CheckpointError(f"Orbax did not save step {step} to {path}", path / str(step))
    return path / str(step)


# --- restore ----------------------------------------------------------------------------


def _mismatches(saved: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """How the target's structure, shapes and floating dtypes differ from the checkpoint's.

    Listed in the target's order, then the entries that only the checkpoint has.
    """
    problems = []
    for key, target in wanted.items():
        stored = saved.get(key)
        if key not in saved:
            problems.append(f"{key}: in the target, not in the checkpoint")
        elif getattr(stored, "shape", None) is None:
            continue  # not an array (a string, say): Orbax checks it
        elif tuple(stored.shape) != np.shape(target):
            problems.append(
                f"{key}: shape {tuple(stored.shape)} in the checkpoint, "
                f"{np.shape(target)} in the target"
            )
        elif _dtype_changes(getattr(stored, "dtype", None), target):
            # Orbax would cast silently; a resumed run must get the saved values back.
            problems.append(
                f"{key}: dtype {stored.dtype} in the checkpoint, {target.dtype} in the target"
            )
    only_saved = [key for key in saved if key not in wanted]
    problems += [f"{key}: in the checkpoint, not in the target" for key in only_saved]
    return problems


def _dtype_changes(stored: Any, target: Any) -> bool:
    """Whether restoring into ``target`` would change the dtype of floating-point values.

    A Python number in the target takes whatever dtype was saved, and integers of another
    width are left to the value check; a float cast would change the values themselves.
    """
    if stored is None or isinstance(target, int | float | complex):
        return False
    wanted = getattr(target, "dtype", None)
    return (
        wanted is not None
        and np.dtype(stored) != np.dtype(wanted)
        and any(jnp.issubdtype(dtype, jnp.inexact) for dtype in (stored, wanted))
    )


def _check_files(step_dir: Path) -> None:
    """Check the files of a checkpoint; read each entry of its array store in turn.

    Orbax reads all arrays at once. When the store is damaged, the first failure ends the
    restore, and the reads it abandons print tracebacks to stderr long after the error.
    Reading every entry here first, one at a time, turns that damage into one clean error.
    Stores in another format than Orbax's default (OCDBT) are left to Orbax.
    """
    store = step_dir / "default"  # the directory of the one item that StandardSave writes
    for needed in ("default/", "default/_METADATA"):  # the item, and its tree's description
        if not (step_dir / needed).exists():
            raise CheckpointError(f"checkpoint {step_dir} is damaged: it has no {needed}", step_dir)
    if not (store / "manifest.ocdbt").is_file():
        return
    spec = {"driver": "ocdbt", "base": {"driver": "file", "path": f"{store}/"}}
    try:
        kvstore = ts.KvStore.open(spec).result()
        keys = kvstore.list().result()
        empty = [key.decode() for key in keys if not kvstore.read(key).result().value]
    except ValueError as error:
        message = f"checkpoint {step_dir} is damaged: {_describe(error)}"
        raise CheckpointError(message, step_dir) from error
    if empty:  # a stored chunk is never empty: its data file has gone
        raise CheckpointError(
            f"checkpoint {step_dir} is damaged: no data for {', '.join(empty)}", step_dir
        )


def _check_values(restored: Any, digests: dict[str, Any], step_dir: Path) -> None:
    """Compare the restored values with the digests recorded when they were saved."""
    for key, value in _flat(restored).items():
        if key not in digests:
            continue
        saved_dtype, saved_sha = digests[key]
        array = np.asarray(jax.device_get(value))
        if str(array.dtype) != saved_dtype:
            if not (np.issubdtype(array.dtype, np.integer) or array.dtype == bool):
                continue  # a float Python scalar restored into another dtype: not comparable
            array = array.astype(saved_dtype)
        if _digest(array)[1] != saved_sha:
            raise CheckpointError(
                f"checkpoint {step_dir} is damaged: the values of {key} read back differ from "
                "those saved (SHA-256 mismatch)",
                step_dir,
            )


def restore_state[T](
    directory: str | os.PathLike[str], target: T, step: int | None = None
) -> Restored[T]:
    """Restore checkpoint ``step`` (default: the newest) from ``directory`` into ``target``.

    ``target`` gives the structure, shapes and dtypes: a live state (for instance a fresh
    ``TrainState``) or an abstract one from ``jax.eval_shape``. Returns ``Restored(step,
    state)``; the state has the target's type, with every array read from the checkpoint.

    Raises ``FileNotFoundError`` (naming the directory and the steps it holds) when the
    directory does not exist, holds no finished checkpoint, or lacks the requested step: a
    resumed run must never start from scratch by accident. Raises :class:`CheckpointError`
    when the checkpoint is damaged, or when its structure, shapes or floating-point dtypes
    differ from the target's. Checkpoints saved by :func:`save_state` also have their values
    compared with the SHA-256 digests recorded at saving time.
    """
    path = _directory(directory)
    if step is not None:
        step = _step(step)
    if target is None:
        raise TypeError("target must be the pytree to restore into, not None")
    _leaves(target, "target")
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint to restore: the directory {path} does not exist")

    with _manager(path, create=False) as manager:
        steps = sorted(manager.all_steps())
        if not steps or (step is not None and step not in steps):
            wanted = "no checkpoint" if step is None else f"no checkpoint for step {step}"
            raise FileNotFoundError(f"{wanted} in {path}: {_steps_message(path, steps)}")
        step = steps[-1] if step is None else step
        step_dir = path / str(step)

        _check_files(step_dir)
        try:
            metadata = manager.item_metadata(step)
        except Exception as error:
            raise CheckpointError(
                f"checkpoint {step_dir} is damaged: Orbax cannot read it ({_describe(error)})",
                step_dir,
            ) from error
        if metadata is None or getattr(metadata, "tree", None) is None:
            message = f"checkpoint {step_dir} is damaged: its metadata is missing"
            raise CheckpointError(message, step_dir)

        problems = _mismatches(_flat(metadata.tree), _flat(target))
        if problems:
            more = len(problems) - _MAX_PROBLEMS
            listed = problems[:_MAX_PROBLEMS] + ([f"... and {more} more"] if more > 0 else [])
            raise CheckpointError(
                f"checkpoint {step_dir} does not match the target:\n  " + "\n  ".join(listed),
                step_dir,
            )

        try:
            restored = manager.restore(step, args=ocp.args.StandardRestore(target))
        except Exception as error:
            raise CheckpointError(
                f"checkpoint {step_dir} cannot be restored: {_describe(error)}", step_dir
            ) from error

    custom = getattr(metadata, "custom_metadata", None) or {}
    _check_values(restored, custom.get(_DIGESTS, {}), step_dir)
    return Restored(step, restored)
