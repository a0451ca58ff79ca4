"""busy.py: counting other processes' runnable threads for oneDNN's thread count."""
import subprocess
import sys
import time

import pytest

from kiln.backend.dnnl import busy

pytestmark = pytest.mark.skipif(busy.busy_cpus() is None, reason="no /proc")


def test_a_spinning_process_counts_and_this_one_does_not(monkeypatch):
    monkeypatch.setattr(busy, "MAX_NICE", 19)       # the suite itself may run niced
    assert busy._runnable_others(own=-1) >= 1       # this test's own thread, running
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        assert busy.busy_cpus() >= 1
    finally:
        child.kill()
        child.wait()


def test_niced_threads_do_not_count(monkeypatch):
    monkeypatch.setattr(busy, "MAX_NICE", -21)      # nothing is that high a priority
    assert busy.busy_cpus() == 0
