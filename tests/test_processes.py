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


def test_when_every_process_fails_it_raises_and_shows_each_status(tmp_path):
    script = _script(tmp_path, """
        import os, sys
        print("some output")
        sys.exit(f"process {os.environ['JAX_PROCESS_ID']} failed")
    """)
    with pytest.raises(RuntimeError) as caught:
        run_processes(script, 2, timeout=60)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("2 processes (coordinator 127.0.0.1:")
    assert lines[0].endswith(") failed:")
    # The first to fail stops the other, which may have failed too by then.
    for i in (0, 1):
        status, error = lines[1 + 2 * i], lines[2 + 2 * i]
        assert (status, error) in {
            (f"process {i}: exit status 1; the end of its standard error:",
             f"    process {i} failed"),
            (f"process {i}: still running, stopped; the end of its standard error:",
             "    (nothing)"),
            (f"process {i}: still running, stopped; the end of its standard error:",
             f"    process {i} failed"),  # stopped as it was exiting
        }
    assert "exit status 1" in lines[1] + lines[3]


def test_one_process_that_fails_silently_is_reported_with_nothing(tmp_path):
    script = _script(tmp_path, "import sys\nsys.exit(3)\n")
    with pytest.raises(RuntimeError, match="failed") as caught:
        run_processes(script, 1, timeout=60)
    assert str(caught.value).splitlines()[1:] == [
        "process 0: exit status 3; the end of its standard error:", "    (nothing)"
    ]


def test_the_report_shows_the_last_fifteen_lines_of_standard_error(tmp_path):
    script = _script(tmp_path, """
        import sys
        for i in range(40):
            print(f"line {i}", file=sys.stderr)
        sys.exit(2)
    """)
    with pytest.raises(RuntimeError) as caught:
        run_processes(script, 1, timeout=60)
    shown = str(caught.value).splitlines()[2:]
    assert shown == [f"    line {i}" for i in range(25, 40)]


def test_the_callers_env_reaches_every_process_and_only_jax_variables_are_set_over_it(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("FROM_PARENT", "inherited")
    monkeypatch.setenv("SHARED", "the parent's")
    script = _script(tmp_path, """
        import json, os
        names = ["FROM_PARENT", "SHARED", "CALLERS", "JAX_PROCESS_ID", "JAX_NUM_PROCESSES",
                 "JAX_COORDINATOR_ADDRESS"]
        print(json.dumps({name: os.environ.get(name) for name in names}))
    """)
    env = {"SHARED": "the caller's", "CALLERS": "yes", "JAX_PROCESS_ID": "7",
           "JAX_NUM_PROCESSES": "9", "JAX_COORDINATOR_ADDRESS": "example.com:1"}
    seen = [json.loads(out) for out in run_processes(script, 2, env=env, timeout=60)]
    for i, variables in enumerate(seen):
        assert variables["FROM_PARENT"] == "inherited"
        assert variables["SHARED"] == "the caller's" and variables["CALLERS"] == "yes"
        assert variables["JAX_PROCESS_ID"] == str(i) and variables["JAX_NUM_PROCESSES"] == "2"
        assert variables["JAX_COORDINATOR_ADDRESS"].startswith("127.0.0.1:")
    assert env["JAX_PROCESS_ID"] == "7"  # the caller's mapping is left as it was


def test_outputs_come_back_in_process_order_whatever_order_they_finish_in(tmp_path):
    script = _script(tmp_path, """
        import os, time
        i = int(os.environ["JAX_PROCESS_ID"])
        time.sleep(0.3 * (2 - i))  # process 2 finishes first
        print(f"output of {i}")
    """)
    assert run_processes(script, 3, timeout=60) == [f"output of {i}\n" for i in range(3)]


def test_a_timeout_reports_processes_still_running_and_those_that_finished(tmp_path):
    script = _script(tmp_path, """
        import os, sys, time
        if os.environ["JAX_PROCESS_ID"] == "0":
            sys.exit(0)
        print("waiting", file=sys.stderr, flush=True)
        time.sleep(60)
    """)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as caught:
        run_processes(script, 2, timeout=2.5)
    assert time.monotonic() - start < 30
    lines = str(caught.value).splitlines()
    assert lines[0].endswith(") did not finish within 2.5 s:")
    assert lines[1:] == [
        "process 0: exit status 0; the end of its standard error:", "    (nothing)",
        "process 1: still running, stopped; the end of its standard error:", "    waiting",
    ]


def test_bad_arguments_name_what_is_wrong(tmp_path):
    script = _script(tmp_path, "print('hello')\n")
    with pytest.raises(FileNotFoundError, match="no script at"):
        run_processes(tmp_path / "missing.py", 2)
    with pytest.raises(FileNotFoundError, match="no script at"):
        run_processes(tmp_path, 2)  # a folder is not a script
    with pytest.raises(TypeError, match=r"^num_processes must be an int, got True$"):
        run_processes(script, True)
    with pytest.raises(ValueError, match=r"^num_processes must be at least 1, got -1$"):
        run_processes(script, -1)
    assert run_processes(str(script), 1, timeout=60) == ["hello\n"]  # a str path works too


def test_free_port_is_one_the_system_picked():
    ports = {free_port() for _ in range(3)}
    assert all(1024 <= port <= 65535 for port in ports)


def test_a_job_returns_as_soon_as_every_process_has_finished(tmp_path):
    script = _script(tmp_path, "print('done')\n")
    start = time.monotonic()
    assert run_processes(script, 2, timeout=5) == ["done\n", "done\n"]
    assert time.monotonic() - start < 4, "it waited for the time limit"
