"""Processes started together and waited for within a bound, for the tests
that drive several ranks or workloads (test_distributed.py,
test_integrations.py)."""

import subprocess


def run_together(commands: list[list[str]], env: dict, timeout: float,
                 cwd: str | None = None) -> list[tuple[int, str]]:
    """Starts every command at once, waits up to `timeout` seconds for each,
    kills whatever is left, and returns each one's exit status and output
    (stdout and stderr together)."""
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=env, cwd=cwd)
             for command in commands]
    outputs = []
    try:
        for proc in procs:
            outputs.append(proc.communicate(timeout=timeout)[0])
    finally:
        for proc in procs:
            proc.kill()
    return [(proc.returncode, output) for proc, output in zip(procs, outputs)]
