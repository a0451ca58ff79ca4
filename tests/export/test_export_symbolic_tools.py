"""The command-line tools on a model exported with symbolic sizes: inspect lists its
symbols and guards, run takes inputs of any size it serves, build-c writes a program that
takes the sizes at run time (or fixes them: --size) and computes what kiln does at each."""
import os
import shutil
import subprocess
import sys

import numpy as onp
import pytest

from kiln import np
from kiln.gluon import HybridBlock

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


needs_make = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                                reason="needs cc and make")


@needs_make
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


def _make(out):
    built = subprocess.run(["make", "-s", "-C", out], capture_output=True, text=True,
                           timeout=120)
    assert built.returncode == 0, built.stderr


def _run_model(out, x, *sizes):
    return subprocess.run([os.path.join(out, "model"), *sizes], input=x.tobytes(),
                          capture_output=True, timeout=60)


@needs_make
def test_one_build_c_program_runs_at_three_batch_sizes(exported):
    net, shape, prefix, folder = exported
    out = str(folder / "c_runtime")
    res = _kiln("build-c", prefix + "-symbol.json", prefix + "-0000.params", "-o", out)
    assert res.returncode == 0, res.stderr
    assert "at run time: batch=N" in res.stdout
    _make(out)
    for b in (3, 1, 6, 0):
        x = onp.random.default_rng(b).normal(size=shape(b, 0)).astype("<f4")
        run = _run_model(out, x, f"batch={b}")
        assert run.returncode == 0, run.stderr
        y = onp.frombuffer(run.stdout, "<f4").reshape(b, 5)
        onp.testing.assert_allclose(y, net(np.array(x)).asnumpy(), rtol=1e-4, atol=1e-5)
    x = onp.ones(shape(2, 0), "<f4")           # no size given: as exported (batch 2)
    run = _run_model(out, x)
    assert run.returncode == 0 and len(run.stdout) == 2 * 5 * 4, run.stderr
    run = _run_model(out, x, "batch=3")          # the input must have the size's elements
    assert run.returncode != 0 and b"too short" in run.stderr
    for bad in ("batch=-1", "batch=x", "seq=2"):
        run = _run_model(out, x, bad)
        assert run.returncode == 2 and bad.split("=")[0].encode() in run.stderr


@needs_make
def test_build_c_encoder_takes_batch_and_length_at_run_time(tmp_path):
    """Two sizes at run time; the memory plan shares buffers only where that holds at
    every size, so the program serves long sequences too (seq * seq scores against
    seq-long rows); sizes the model does not serve are refused naming the condition."""
    from kiln.export.standalone_c import build_c
    net, axes, shape = model("encoder")
    net.hybridize(backend="numpy")
    net(np.random.normal(size=shape(2, 3)))
    prefix = str(tmp_path / "enc")
    net.export(prefix, dynamic_axes=axes)
    out = str(tmp_path / "c")
    build_c(prefix + "-symbol.json", prefix + "-0000.params", out)
    _make(out)
    for b, s in [(1, 1), (3, 4), (2, 40), (5, 2)]:
        x = onp.random.default_rng(b * 100 + s).normal(size=shape(b, s)).astype("<f4")
        run = _run_model(out, x, f"seq={s}", f"batch={b}")
        assert run.returncode == 0, run.stderr
        y = onp.frombuffer(run.stdout, "<f4").reshape(b, s, 16)
        onp.testing.assert_allclose(y, net(np.array(x)).asnumpy(), rtol=1e-4, atol=1e-4)
    run = _run_model(out, onp.zeros(0, "<f4"), "batch=0", "seq=3")
    assert run.returncode == 2 and b"does not hold" in run.stderr     # softmax of nothing


@needs_make
def test_build_c_conv_net_takes_the_batch_at_run_time(tmp_path):
    """Standalone C's convolutions (the sliding windows of its plain-C expansion, no oneDNN)
    loop over a run-time batch: one program runs at three batch sizes, equal to kiln."""
    net, axes, shape = model("cnn")
    net.hybridize(backend="numpy")
    net(np.random.normal(size=shape(2, 0)))
    prefix = str(tmp_path / "cnn")
    net.export(prefix, dynamic_axes=axes)
    out = str(tmp_path / "c")
    res = _kiln("build-c", prefix + "-symbol.json", prefix + "-0000.params", "-o", out)
    assert res.returncode == 0, res.stderr
    assert "at run time: batch=N" in res.stdout
    _make(out)
    for b in (3, 1, 6):
        x = onp.random.default_rng(b).normal(size=shape(b, 0)).astype("<f4")
        want = net(np.array(x)).asnumpy()
        run = _run_model(out, x, f"batch={b}")
        assert run.returncode == 0, run.stderr
        onp.testing.assert_allclose(onp.frombuffer(run.stdout, "<f4").reshape(want.shape),
                                    want, rtol=1e-4, atol=1e-5)


class _Pick(HybridBlock):
    def forward(self, x):
        return np.take(x, np.array([0, 2]), axis=1) * 2


@needs_make
def test_build_c_fixes_the_sizes_its_c_needs_the_values_of(tmp_path):
    """A lowering that needs a size's value (take's generated C, for now): the program is
    built at the exported sizes, and says so."""
    net = _Pick()
    net.hybridize(backend="numpy")
    x = np.random.normal(size=(2, 4))
    want = net(x).asnumpy()
    prefix = str(tmp_path / "pick")
    net.export(prefix, dynamic_axes={"x": {0: "batch"}})
    out = str(tmp_path / "c")
    res = _kiln("build-c", prefix + "-symbol.json", prefix + "-0000.params", "-o", out)
    assert res.returncode == 0, res.stderr
    assert "fixed in this program: batch=2 (as exported" in res.stdout
    _make(out)
    run = _run_model(out, x.asnumpy().astype("<f4"))
    assert run.returncode == 0, run.stderr
    onp.testing.assert_allclose(onp.frombuffer(run.stdout, "<f4").reshape(want.shape), want,
                                rtol=1e-4, atol=1e-5)
    run = _run_model(out, x.asnumpy().astype("<f4"), "batch=2")
    assert run.returncode == 2 and b"fixed when it was built" in run.stderr
