"""The command-line tools on a model exported with symbolic sizes: inspect lists its
symbols and guards, run takes inputs of any size it serves, build-c fixes the sizes
(--size, or the exported ones) and the program computes what kiln does at each."""
import os
import shutil
import subprocess
import sys

import numpy as onp
import pytest

from kiln import np

from dynamic_models import model
from paths import ROOT


def _kiln(*args, **kw):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "kiln", *args], env=env, capture_output=True,
                          text=True, timeout=300, **kw)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dyn")
    net, axes, shape = model("mlp")
    net.hybridize(backend="numpy")
    net(np.random.normal(size=shape(2, 0)))
    prefix = str(folder / "mlp")
    net.export(prefix, dynamic_axes=axes)
    return net, shape, prefix, folder


def test_inspect_lists_symbols(exported):
    net, shape, prefix, _ = exported
    res = _kiln("inspect", prefix + "-symbol.json")
    assert res.returncode == 0, res.stderr
    assert "data: float32[batch, 12]" in res.stdout and "batch (2)" in res.stdout


def test_run_takes_any_batch(exported):
    net, shape, prefix, folder = exported
    for b in (1, 4):
        x = onp.random.default_rng(b).normal(size=shape(b, 0)).astype("float32")
        onp.save(folder / "x.npy", x)
        res = _kiln("run", prefix + "-symbol.json", prefix + "-0000.params", "--input",
                    str(folder / "x.npy"), "--output", str(folder / "y.npy"))
        assert res.returncode == 0, res.stderr
        onp.testing.assert_allclose(onp.load(folder / "y.npy"), net(np.array(x)).asnumpy(),
                                    rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                    reason="needs cc and make")
def test_build_c_at_three_batch_sizes(exported):
    net, shape, prefix, folder = exported
    for b in (1, 3, 6):
        out = str(folder / f"c{b}")
        res = _kiln("build-c", prefix + "-symbol.json", prefix + "-0000.params", "-o", out,
                    "--size", f"batch={b}")
        assert res.returncode == 0, res.stderr
        assert f"batch={b}" in res.stdout
        built = subprocess.run(["make", "-s", "-C", out], capture_output=True, text=True,
                               timeout=120)
        assert built.returncode == 0, built.stderr
        x = onp.random.default_rng(b).normal(size=shape(b, 0)).astype("<f4")
        run = subprocess.run([os.path.join(out, "model")], input=x.tobytes(),
                             capture_output=True, timeout=60)
        assert run.returncode == 0, run.stderr
        y = onp.frombuffer(run.stdout, "<f4").reshape(b, 5)
        onp.testing.assert_allclose(y, net(np.array(x)).asnumpy(), rtol=1e-4, atol=1e-5)


def test_build_c_sizes_are_checked(exported):
    _, _, prefix, folder = exported
    res = _kiln("build-c", prefix + "-symbol.json", prefix + "-0000.params", "-o",
                str(folder / "bad"), "--size", "seq=3")
    assert res.returncode != 0 and "batch" in res.stderr
    res = _kiln("build-c", prefix + "-symbol.json", prefix + "-0000.params", "-o",
                str(folder / "bad"), "--size", "batch=x")
    assert res.returncode != 0 and "NAME=N" in res.stderr
