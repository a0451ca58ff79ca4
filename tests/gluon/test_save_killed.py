"""A writer killed mid-save (SIGKILL, the OOM killer) leaves its temporary file; the next
save into that directory removes it. Temporary files of live writers stay."""
import os
import signal
import subprocess
import sys
import textwrap

from kiln import np
from kiln.gluon import nn
from kiln.npx import io as npx_io

from paths import ROOT

WRITER = textwrap.dedent("""
    import os, sys, time
    from kiln.gluon import nn
    net = nn.Dense(1000, in_units=1000)
    net.initialize()

    def stall(src, dst):          # the data is written; die before it is renamed
        print("written", flush=True)
        time.sleep(600)

    os.replace = stall
    net.save_parameters(sys.argv[1])
""")


def _temps(directory):
    return sorted(n for n in os.listdir(directory) if n.startswith(".kiln-"))


def test_a_killed_writers_temporary_file_is_removed_by_the_next_save(tmp_path):
    target = str(tmp_path / "net.params")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, target], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        assert writer.stdout.readline().strip() == "written"
        os.kill(writer.pid, signal.SIGKILL)
    finally:
        writer.wait(timeout=60)
    [stale] = _temps(tmp_path)
    assert os.path.getsize(tmp_path / stale) > 4_000_000      # a whole 1000x1000 float32
    assert not os.path.exists(target)                         # the save never completed

    net = nn.Dense(2, in_units=2)
    net.initialize()
    net.save_parameters(str(tmp_path / "other.params"))
    assert _temps(tmp_path) == []
    net.load_parameters(str(tmp_path / "other.params"))


def test_a_live_writers_temporary_file_stays(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        live_temp = tmp_path / (npx_io.temp_prefix(live.pid) + "abc.tmp")
        live_temp.write_bytes(b"in progress")
        someone_elses = tmp_path / ".kiln-unrelated.tmp"      # not named by a pid: kept
        someone_elses.write_bytes(b"")
        kiln_np_save = str(tmp_path / "x.npz")
        npx_io.save(kiln_np_save, [np.ones(2)])
        assert _temps(tmp_path) == sorted([live_temp.name, someone_elses.name])
    finally:
        live.kill()
        live.wait(timeout=60)
    npx_io.save(kiln_np_save, [np.ones(2)])                 # now its writer is gone
    assert _temps(tmp_path) == [someone_elses.name]
