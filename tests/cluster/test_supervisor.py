"""``groupcoord cluster supervise``: a command that fails is started again, one that ends cleanly (0) or with bad
configuration (2) is not, what a run leaves in its process group dies with it, and a stop is passed on; a driver pair
(``--replicas 2``) runs two instances, each told its index and restarted on its own. Real processes (small Python
scripts), no Spark."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from groupcoord.cluster import Replicas, RestartPolicy, Supervisor
from groupcoord.cluster.processes import alive

pytestmark = pytest.mark.integration

FAST = RestartPolicy(max_restarts=5, window_s=60, backoff_s=0.05, backoff_max_s=0.2)

# Exits with the next code of argv[2:] at each run (counted in the file argv[1]); "kill" kills itself with SIGKILL.
SCRIPT = """
import os, signal, sys
counter = sys.argv[1]
runs = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(runs + 1))
code = sys.argv[2:][min(runs, len(sys.argv) - 3)]
if code == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
sys.exit(int(code))
"""


def scripted(tmp_path: Path, *codes: str) -> list[str]:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    return [sys.executable, str(script), str(tmp_path / "runs"), *codes]


def test_a_failing_command_is_started_again_until_it_succeeds(tmp_path: Path) -> None:
    supervisor = Supervisor(scripted(tmp_path, "1", "kill", "0"), policy=FAST)
    assert supervisor.run() == 0
    assert [run.code for run in supervisor.runs] == [1, -signal.SIGKILL, 0]


@pytest.mark.parametrize("code", ["0", "2"])
def test_a_clean_end_or_bad_configuration_is_final(tmp_path: Path, code: str) -> None:
    supervisor = Supervisor(scripted(tmp_path, code), policy=FAST)
    assert supervisor.run() == int(code)
    assert len(supervisor.runs) == 1


def test_it_gives_up_after_max_restarts_within_the_window(tmp_path: Path) -> None:
    supervisor = Supervisor(scripted(tmp_path, "1"), policy=RestartPolicy(max_restarts=2, backoff_s=0.01))
    assert supervisor.run() == 1
    assert len(supervisor.runs) == 3


def test_what_a_run_leaves_in_its_process_group_is_killed_before_the_next_start(tmp_path: Path) -> None:
    """A Python driver outliving spark-submit's JVM would hold the coordinator's lease: the group dies with the run."""
    pid_file = tmp_path / "orphan.pid"
    leaver = (f"import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
              f"open({str(pid_file)!r}, 'w').write(str(p.pid)); sys.exit(0)")
    supervisor = Supervisor([sys.executable, "-c", leaver], policy=FAST)
    assert supervisor.run() == 0
    orphan = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(orphan) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(orphan)


def test_the_cli_passes_sigterm_on_writes_the_pid_file_and_exits_with_the_commands_code(tmp_path: Path) -> None:
    pid_file = tmp_path / "driver.pid"
    child = "import signal, sys, time; signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)); time.sleep(60)"
    code, output, [supervised] = supervise_then_sigterm(["--pid-file", str(pid_file)], child, [pid_file])
    assert code == 0, output
    assert f"passing SIGTERM on to pid {supervised}" in output
    assert not alive(supervised)


def supervise_then_sigterm(options: list[str], child: str, pid_files: list[Path]) -> tuple[int, str, list[int]]:
    """Run ``groupcoord cluster supervise OPTIONS -- python -c CHILD``, wait for its pid files, send it SIGTERM once
    the children set their handlers; its exit code, its output and the pids the files named."""
    supervise = subprocess.Popen([sys.executable, "-m", "groupcoord", "cluster", "supervise", *options, "--",
                                  sys.executable, "-c", child],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while not all(f.exists() for f in pid_files) and time.monotonic() < deadline:
            time.sleep(0.05)
        supervised = [int(f.read_text()) for f in pid_files]
        assert all(alive(pid) for pid in supervised)
        time.sleep(1)  # the children's handlers are set
        supervise.send_signal(signal.SIGTERM)
        output, _ = supervise.communicate(timeout=30)
    finally:
        if supervise.poll() is None:
            supervise.kill()
    return supervise.returncode, output, supervised


def test_the_cli_refuses_a_missing_command_in_one_line() -> None:
    run = subprocess.run([sys.executable, "-m", "groupcoord", "cluster", "supervise", "--"], capture_output=True,
                         text=True, env={**os.environ}, timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip() == "groupcoord: error: cluster supervise: no command given (put it after --)"


def test_a_stop_goes_to_what_the_command_started_so_that_it_ends_cleanly(tmp_path: Path) -> None:
    """spark-submit's case: the first process (here a shell) waits for the application it started (a Python driver
    that stops cleanly on SIGTERM); signalled too, the first process would end at once (143) and the group be killed
    under the application's clean stop."""
    marker = tmp_path / "stopped"
    app = (f"import signal, sys, time; signal.signal(signal.SIGTERM, lambda *_: (open({str(marker)!r}, 'w').close(), "
           "sys.exit(0))); time.sleep(60)")
    supervisor = Supervisor(["sh", "-c", f'{sys.executable} -c "{app}"; exit $?'], policy=FAST)
    runner = threading.Thread(target=lambda: codes.append(supervisor.run()))
    codes: list[int] = []
    runner.start()
    time.sleep(2)  # the shell started the application, which set its handler
    supervisor.request_stop()
    runner.join(30)
    assert codes == [0]
    assert marker.exists()


# Prints its instance, then exits with the next code of argv[2:] at each run (counted per instance in argv[1]-<i>).
INSTANCE_SCRIPT = """
import os, sys
instance = os.environ["GROUPCOORD_DRIVER_INSTANCE"]
counter = f"{sys.argv[1]}-{instance}"
runs = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(runs + 1))
print(f"instance {instance} run {runs + 1}", flush=True)
codes = sys.argv[2:][int(instance)].split(",")
sys.exit(int(codes[min(runs, len(codes) - 1)]))
"""


def test_a_driver_pair_runs_each_instance_with_its_index_pid_file_and_output_on_its_own(tmp_path: Path) -> None:
    """Instance 1 fails once and is started again alone; instance 0 runs once; each knows its index."""
    script = tmp_path / "instance.py"
    script.write_text(INSTANCE_SCRIPT)
    output = io.BytesIO()
    replicas = Replicas([sys.executable, str(script), str(tmp_path / "runs"), "0", "1,0"], 2, policy=FAST,
                        pid_file=tmp_path / "driver.pid", output=output)
    assert replicas.run() == 0
    assert [[run.code for run in s.runs] for s in replicas.supervisors] == [[0], [1, 0]]
    lines = sorted(output.getvalue().decode().splitlines())
    assert lines == ["[driver 0] instance 0 run 1", "[driver 1] instance 1 run 1", "[driver 1] instance 1 run 2"]
    pids = [int((tmp_path / f"driver-{i}.pid").read_text()) for i in range(2)]
    assert pids == [replicas.supervisors[0].runs[-1].pid, replicas.supervisors[1].runs[-1].pid]
    assert not (tmp_path / "driver.pid").exists()


def test_a_driver_pair_exits_with_the_first_failing_instances_code(tmp_path: Path) -> None:
    script = tmp_path / "instance.py"
    script.write_text(INSTANCE_SCRIPT)
    replicas = Replicas([sys.executable, str(script), str(tmp_path / "runs"), "0", "2"], 2, policy=FAST,
                        output=io.BytesIO())
    assert replicas.run() == 2  # bad configuration: final for instance 1, whose partner still ran to its end
    assert [len(s.runs) for s in replicas.supervisors] == [1, 1]


def test_the_cli_runs_a_pair_and_passes_sigterm_on_to_both(tmp_path: Path) -> None:
    child = ("import os, signal, sys, time; signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)); "
             "print('instance', os.environ['GROUPCOORD_DRIVER_INSTANCE'], flush=True); time.sleep(60)")
    code, output, supervised = supervise_then_sigterm(
        ["--replicas", "2", "--pid-file", str(tmp_path / "driver.pid")], child,
        [tmp_path / f"driver-{i}.pid" for i in range(2)])
    assert code == 0, output
    assert "[driver 0] instance 0" in output and "[driver 1] instance 1" in output
    for index, pid in enumerate(supervised):
        assert f"supervise [driver {index}]: passing SIGTERM on to pid {pid}" in output
        assert not alive(pid)


def test_the_cli_tells_one_instance_its_index_and_refuses_instance_with_replicas(tmp_path: Path) -> None:
    show = "import os; print(os.environ.get('GROUPCOORD_DRIVER_INSTANCE'))"
    one = subprocess.run([sys.executable, "-m", "groupcoord", "cluster", "supervise", "--instance", "1", "--",
                          sys.executable, "-c", show], capture_output=True, text=True, timeout=60)
    assert one.returncode == 0 and one.stdout.strip() == "1", one.stderr
    both = subprocess.run([sys.executable, "-m", "groupcoord", "cluster", "supervise", "--instance", "1",
                           "--replicas", "2", "--", sys.executable, "-c", show], capture_output=True, text=True,
                          timeout=60)
    assert both.returncode == 2
    assert "not allowed with argument" in both.stderr
