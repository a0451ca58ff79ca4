"""`python -m kiln ...` fails in one clear line, with no location but the user's: a wrong
input shape names the input and both shapes (not `<frozen runpy>`), a missing script is
exit code 2 without a traceback, and every benchmark `kiln bench` lists runs."""
import os
import subprocess
import sys

import numpy as onp
import pytest

from kiln import np
from kiln.cli import bench
from kiln.gluon import nn

from paths import ROOT


def _kiln(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "kiln", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    net = nn.HybridSequential()
    net.add(nn.Dense(3, in_units=4))
    net.initialize()
    net.hybridize()
    net(np.ones((2, 4)))
    sym, par = net.export(str(root / "m"))
    return root, sym, par


def test_run_with_a_wrong_input_shape_names_the_input_and_no_bogus_location(exported):
    root, sym, par = exported
    onp.save(root / "wrong.npy", onp.ones((2, 5), "float32"))
    res = _kiln("run", sym, par, "--input", str(root / "wrong.npy"))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "'data'" in res.stderr and "[2, 4]" in res.stderr and "[2, 5]" in res.stderr
    assert "frozen" not in res.stderr and "runpy" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_run_with_a_hostile_input_file_is_one_line(exported):
    root, sym, par = exported
    header = onp.lib.format
    with open(root / "hostile.npy", "wb") as f:
        header.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False,
                                          "shape": (1 << 40, 4)})
    res = _kiln("run", sym, par, "--input", str(root / "hostile.npy"))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert str(1 << 40) in res.stderr and "hostile.npy" in res.stderr


def test_mxnet_with_a_missing_script_is_one_line_and_exit_code_2(tmp_path):
    res = _kiln("mxnet", "missing.py", cwd=tmp_path)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "missing.py" in res.stderr


def test_mxnet_errors_in_the_script_name_the_scripts_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import mxnet as mx\nfrom mxnet.gluon import nn\n"
                      "net = nn.Dense(2, in_units=3)\nnet.initialize()\n"
                      "net(mx.nd.ones((2, 4)))\n")
    res = _kiln("mxnet", str(script))
    assert res.returncode != 0
    assert f"{script}:5" in res.stderr


def test_bench_lists_only_runnable_scripts_and_each_shows_its_help():
    names = bench.runnable()
    assert "first_call" in names and "mlp" in names
    assert "harness" not in names and "peers" not in names and "cnn_models" not in names
    for name in names:
        res = _kiln("bench", name, "--help")
        assert res.returncode == 0, (name, res.stderr)
        assert "usage" in res.stdout, name


def test_bench_first_call_runs_and_reports_both_caches():
    res = _kiln("bench", "first_call")
    assert res.returncode == 0, res.stderr
    assert "| cold (empty KILN_CACHE_DIR) |" in res.stdout
    assert "| warm (compiled object on disk) |" in res.stdout


def test_bench_of_a_module_that_is_not_a_benchmark_is_one_line():
    res = _kiln("bench", "harness")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "first_call" in res.stderr                 # the list of what can run
