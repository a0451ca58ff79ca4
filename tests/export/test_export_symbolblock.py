"""SymbolBlock: gradients equal the original model's, it fine-tunes with Trainer, and the
CLI tools (inspect, run, draw) read the same files."""
import os
import subprocess
import sys

import numpy as onp
import pytest

import kiln
from kiln import np, gluon
from kiln import autograd
from kiln.gluon import nn

from export_models import build
from paths import ROOT

REPO = ROOT


def _grads(net, x):
    xa = np.array(x)
    xa.attach_grad()
    with autograd.record(train_mode=False):    # the exported graph is the predict graph
        loss = (net(xa) ** 2).sum()
    loss.backward()
    return xa.grad.asnumpy(), {n: p.grad().asnumpy() for n, p in net.collect_params().items()
                               if p.grad_req != "null"}


@pytest.mark.parametrize("kind", ["mlp", "cnn", "residual"])
@pytest.mark.parametrize("hybrid", [False, True])
def test_gradients_equal_original(kind, hybrid, tmp_path):
    net, x = build(kind)
    sym, par = net.export(str(tmp_path / kind))
    sb = nn.SymbolBlock.imports(sym, ["data"], par)
    if hybrid:
        sb.hybridize()
    gx_ref, gp_ref = _grads(net, x)
    gx, gp = _grads(sb, x)
    onp.testing.assert_allclose(gx, gx_ref, rtol=1e-4, atol=1e-5)
    assert set(gp) == set(gp_ref)
    for name in gp_ref:
        onp.testing.assert_allclose(gp[name], gp_ref[name], rtol=1e-4, atol=1e-5,
                                    err_msg=name)


def test_fine_tune_with_trainer(tmp_path):
    net, x = build("mlp")
    sym, par = net.export(str(tmp_path / "mlp"))
    sb = nn.SymbolBlock.imports(sym, "data", par)
    sb.hybridize()
    target = np.array(onp.random.default_rng(1).integers(0, 3, size=4))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(sb.collect_params(), "adam", {"learning_rate": 0.05})
    assert "0.weight" in sb.collect_params()
    losses = []
    for _ in range(10):
        with autograd.record():
            loss = loss_fn(sb(np.array(x)), target)
        loss.backward()
        trainer.step(4)
        losses.append(float(loss.mean()))
    assert losses[-1] < 0.5 * losses[0]
    # the fine-tuned weights save and load back into the original class
    sb.save_parameters(str(tmp_path / "tuned.params"))
    fresh, _ = build("mlp", seed=5)
    fresh.load_parameters(str(tmp_path / "tuned.params"))
    onp.testing.assert_allclose(fresh(np.array(x)).asnumpy(), sb(np.array(x)).asnumpy(),
                                rtol=1e-5, atol=1e-6)


def test_wrong_inputs_are_clear_errors(tmp_path):
    net, x = build("mlp")
    sym, par = net.export(str(tmp_path / "mlp"))
    with pytest.raises(kiln.KilnError, match="input_names"):
        nn.SymbolBlock.imports(sym, ["images"], par)
    sb = nn.SymbolBlock.imports(sym, ["data"], par)
    with pytest.raises(kiln.KilnError, match="exported signature"):
        sb(np.zeros((5, 8)))
    no_params = nn.SymbolBlock.imports(sym, ["data"])
    with pytest.raises(kiln.KilnError):
        no_params(np.array(x))


def _cli(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kiln", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_inspect_run_draw(tmp_path):
    net, x = build("cnn")
    sym, par = net.export(str(tmp_path / "cnn"))
    res = _cli("inspect", sym)
    assert res.returncode == 0, res.stderr
    assert "data: float32[2, 1, 10, 10]" in res.stdout and "conv" in res.stdout
    assert "parameters: 12 arrays" in res.stdout and "matches" in res.stdout
    onp.save(tmp_path / "x.npy", x)
    res = _cli("run", sym, par, "--input", str(tmp_path / "x.npy"),
               "--output", str(tmp_path / "y.npy"))
    assert res.returncode == 0, res.stderr
    onp.testing.assert_allclose(onp.load(tmp_path / "y.npy"), net(np.array(x)).asnumpy(),
                                rtol=1e-5, atol=1e-6)
    res = _cli("draw", sym, "-o", str(tmp_path / "g.dot"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "g.dot").read_text().startswith("digraph")
    res = _cli("draw", sym, "-o", str(tmp_path / "g.svg"))
    assert res.returncode == 0 or "dot" in res.stderr
    res = _cli("inspect", str(tmp_path / "missing-symbol.json"))
    assert res.returncode == 1 and "Traceback" not in res.stderr
