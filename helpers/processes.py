"""Several JAX processes on one machine (chapter 13, "Sharded training").

A job that spans several hosts runs one Python process per host; each calls
``jax.distributed.initialize`` with the address of a coordinator, the number of processes and
its own number. :func:`run_processes` starts such a job on this machine: it picks a free port
on 127.0.0.1 for the coordinator, starts the processes, waits for them with a time limit and
returns what each printed. If one fails, or time runs out, it stops the others and raises an
error that shows each process's exit status and the end of its standard error.
"""

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

__all__ = ["free_port", "run_processes"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the system picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_processes(
    script: str | os.PathLike,
    num_processes: int,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> list[str]:
    """Run ``python script`` as ``num_processes`` processes at once; return their outputs.

    Each process gets, besides this process's environment and ``env``, the variables
    ``JAX_COORDINATOR_ADDRESS`` (``127.0.0.1:<free port>``, the same for all),
    ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID`` (0, 1, ...), which the script passes to
    ``jax.distributed.initialize``. It runs in the script's folder. The result is each
    process's standard output, in process order. A process that exits with an error, or a
    job still running after ``timeout`` seconds, stops all of them and raises RuntimeError.
    """
    script = Path(script).resolve()
    if not script.is_file():
        raise FileNotFoundError(f"no script at {script}")
    if isinstance(num_processes, bool) or not isinstance(num_processes, int):
        raise TypeError(f"num_processes must be an int, got {num_processes!r}")
    if num_processes < 1:
        raise ValueError(f"num_processes must be at least 1, got {num_processes}")
    address = f"127.0.0.1:{free_port()}"
    outputs = [tempfile.TemporaryFile("w+") for _ in range(2 * num_processes)]
    processes = [
        subprocess.Popen(
            [sys.executable, str(script)], cwd=script.parent,
            stdout=outputs[2 * i], stderr=outputs[2 * i + 1],
            env={**os.environ, **(env or {}), "JAX_COORDINATOR_ADDRESS": address,
                 "JAX_NUM_PROCESSES": str(num_processes), "JAX_PROCESS_ID": str(i)},
        )
        for i in range(num_processes)
    ]
    deadline = time.monotonic() + timeout
    try:
        while (codes := [p.poll() for p in processes]) != [0] * num_processes:
            failed = any(code not in (None, 0) for code in codes)
            if failed or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()
    texts = []
    for output in outputs:
        output.seek(0)
        texts.append(output.read())
        output.close()
    if codes == [0] * num_processes:
        return texts[0::2]
    problem = "failed" if failed else f"did not finish within {timeout:g} s"
    report = [f"{num_processes} processes (coordinator {address}) {problem}:"]
    for i, code in enumerate(codes):
        status = "still running, stopped" if code is None else f"exit status {code}"
        last = texts[2 * i + 1].strip().splitlines()[-15:] or ["(nothing)"]
        report += [f"process {i}: {status}; the end of its standard error:"]
        report += [f"    {line}" for line in last]
    raise RuntimeError("\n".join(report))
