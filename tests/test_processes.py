"""Tests of helpers.processes: several processes started as one job, and its failures."""

from __future__ import annotations

import json
import socket
import textwrap
import time

import pytest

from helpers import free_port, run_processes


def _script(tmp_path, source: str):
    path = tmp_path / "worker.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def test_free_port_can_be_bound():
    with socket.socket() as server:
        server.bind(("127.0.0.1", free_port()))


def test_each_process_gets_its_number_and_the_same_coordinator(tmp_path):
    script = _script(tmp_path, """
        import json, os
        names = ["JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "EXTRA"]
        print(json.dumps({name: os.environ[name] for name in names}))
        print(os.getcwd())
    """)
    outputs = run_processes(script, 3, env={"EXTRA": "passed on"}, timeout=60)
    seen = [json.loads(output.splitlines()[0]) for output in outputs]
    assert [s["JAX_PROCESS_ID"] for s in seen] == ["0", "1", "2"]
    assert {s["JAX_NUM_PROCESSES"] for s in seen} == {"3"}
    assert len({s["JAX_COORDINATOR_ADDRESS"] for s in seen}) == 1
    assert seen[0]["JAX_COORDINATOR_ADDRESS"].startswith("127.0.0.1:")
    assert {s["EXTRA"] for s in seen} == {"passed on"}
    assert {output.splitlines()[1] for output in outputs} == {str(tmp_path.resolve())}


def test_a_failing_process_stops_the_others_and_its_error_is_shown(tmp_path):
    script = _script(tmp_path, """
        import os, sys, time
        if os.environ["JAX_PROCESS_ID"] == "1":
            sys.exit("process 1 cannot find its data")
        time.sleep(60)  # the others would wait for it
    """)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="failed") as caught:
        run_processes(script, 2, timeout=60)
    assert time.monotonic() - start < 30, "the launcher waited for the processes that hang"
    message = str(caught.value)
    assert "process 1: exit status 1" in message
    assert "cannot find its data" in message
    assert "process 0: still running, stopped" in message


def test_a_job_that_takes_too_long_is_stopped(tmp_path):
    script = _script(tmp_path, """
        import sys, time
        print("starting", file=sys.stderr, flush=True)
        time.sleep(60)
    """)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="did not finish within 2 s"):
        run_processes(script, 2, timeout=2)
    assert time.monotonic() - start < 30


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError):
        run_processes(tmp_path / "missing.py", 2)
    script = _script(tmp_path, "print('hello')\n")
    with pytest.raises(ValueError, match="at least 1"):
        run_processes(script, 0)
    with pytest.raises(TypeError):
        run_processes(script, 2.0)


def test_two_jax_processes_compute_one_sharded_sum(tmp_path):
    """What chapter 13 relies on: jax.distributed over CPU collectives on this machine."""
    script = _script(tmp_path, """
        import os
        import jax

        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.config.update("jax_num_cpu_devices", 2)
        jax.distributed.initialize(
            coordinator_address=os.environ["JAX_COORDINATOR_ADDRESS"],
            num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
            process_id=int(os.environ["JAX_PROCESS_ID"]),
        )
        import numpy as np

        mesh = jax.make_mesh((jax.device_count(),), ("data",))
        rows = jax.NamedSharding(mesh, jax.P("data"))
        mine = np.arange(4.0) + 4 * jax.process_index()  # 0..3 and 4..7
        x = jax.make_array_from_process_local_data(rows, mine)
        total = jax.jit(lambda x: (x**2).sum())(x)
        print("RESULT", jax.process_index(), jax.device_count(), float(total))
    """)
    outputs = run_processes(script, 2, env={"JAX_PLATFORMS": "cpu"}, timeout=120)
    results = [line.split()[1:] for out in outputs for line in out.splitlines()
               if line.startswith("RESULT")]
    assert results == [["0", "4", "140.0"], ["1", "4", "140.0"]]  # 0² + 1² + ... + 7²
