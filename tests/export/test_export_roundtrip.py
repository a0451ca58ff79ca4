"""Export -> every reader equals eager predict mode: SymbolBlock in a new process, ONNX
Runtime, the standalone C program, and load_parameters into a new instance."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as onp
import pytest

import kiln
from kiln import gluon, np
from kiln.gluon import nn

from export_models import BUILDERS, build
from paths import ROOT

REPO = ROOT
KINDS = sorted(BUILDERS)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """kind -> (net, x, eager predict-mode output, path prefix)."""
    root = tmp_path_factory.mktemp("exported")
    out = {}
    for kind in KINDS:
        net, x = build(kind)
        y = net(np.array(x)).asnumpy()
        prefix = str(root / kind)
        net.export(prefix)
        out[kind] = (net, x, y, prefix)
    return out


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_files_and_schema(exported):
    _, _, _, prefix = exported["cnn"]
    assert os.path.exists(prefix + "-symbol.json") and os.path.exists(prefix + "-0000.params")
    doc = json.load(open(prefix + "-symbol.json"))
    assert doc["format"] == "kiln-symbol" and doc["format_version"] == 1
    assert doc["inputs"][0]["shape"] == [2, 1, 10, 10]
    ops = {n["op"] for n in doc["nodes"]}
    assert {"conv", "pool", "matmul", "param", "input"} <= ops
    assert "random_uniform" not in ops            # dropout is gone in predict mode
    pool = [n for n in doc["nodes"] if n["op"] == "pool"
            and n["attrs"]["kind"] == {"str": "max"}]
    assert pool, "max pooling's attributes are stored tagged"
    names = set(onp.load(prefix + "-0000.params").files)
    assert "1.running_mean" in names and "0.weight" in names


def test_symbolblock_in_new_process(exported, tmp_path):
    """The loader needs no model class: a fresh interpreter that imports only kiln."""
    script = textwrap.dedent("""
        import sys
        import numpy as onp
        from kiln import np
        from kiln.gluon import nn
        for prefix in sys.argv[1:]:
            net = nn.SymbolBlock.imports(prefix + "-symbol.json", ["data"],
                                         prefix + "-0000.params")
            x = onp.load(prefix + "-x.npy")
            onp.save(prefix + "-eager.npy", net(np.array(x)).asnumpy())
            net.hybridize()
            onp.save(prefix + "-hybrid.npy", net(np.array(x)).asnumpy())
    """)
    prefixes = []
    for kind in KINDS:
        _, x, _, prefix = exported[kind]
        onp.save(prefix + "-x.npy", x)
        prefixes.append(prefix)
    res = subprocess.run([sys.executable, "-c", script, *prefixes], env=_env(),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    for kind in KINDS:
        _, _, y, prefix = exported[kind]
        for mode in ("eager", "hybrid"):
            onp.testing.assert_allclose(onp.load(f"{prefix}-{mode}.npy"), y,
                                        rtol=1e-5, atol=1e-5, err_msg=f"{kind} {mode}")


@pytest.mark.parametrize("kind", KINDS)
def test_load_parameters_into_new_instance(exported, kind):
    _, x, y, prefix = exported[kind]
    make, _ = BUILDERS[kind]
    fresh = make()
    fresh.load_parameters(prefix + "-0000.params")   # constants (__const__.*) are skipped
    onp.testing.assert_allclose(fresh(np.array(x)).asnumpy(), y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_onnx_runtime_matches(exported, kind, tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import kiln.onnx
    net, x, y, prefix = exported[kind]
    for source in (net, prefix + "-symbol.json"):
        path = str(tmp_path / f"{kind}.onnx")
        kiln.onnx.export(source, [np.array(x)], path)
        model = onnx.load(path)
        onnx.checker.check_model(model)
        if kind == "cnn":
            types = {n.op_type for n in model.graph.node}
            assert {"Conv", "MaxPool", "AveragePool"} <= types
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        (out,) = sess.run(None, {"data": x})
        onp.testing.assert_allclose(out, y, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                    reason="needs cc and make")
@pytest.mark.parametrize("kind", KINDS)
def test_standalone_c_matches(exported, kind, tmp_path):
    _, x, y, prefix = exported[kind]
    out_dir = str(tmp_path / "c")
    res = subprocess.run([sys.executable, "-m", "kiln", "build-c", prefix + "-symbol.json",
                          prefix + "-0000.params", "-o", out_dir], env=_env(),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert {"model.c", "model.h", "weights.c", "main.c", "Makefile"} <= set(os.listdir(out_dir))
    built = subprocess.run(["make", "-C", out_dir], capture_output=True, text=True,
                           timeout=120)
    assert built.returncode == 0, built.stderr
    exe = os.path.join(out_dir, "model")
    run = subprocess.run([exe], input=x.astype("<f4").tobytes(), capture_output=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    out = onp.frombuffer(run.stdout, "<f4").reshape(y.shape)
    onp.testing.assert_allclose(out, y, rtol=1e-4, atol=1e-5)
    # an input file of the wrong size is refused with a clear message
    bad = tmp_path / "short.bin"
    bad.write_bytes(x.astype("<f4").tobytes()[:-4])
    run = subprocess.run([exe, str(bad)], capture_output=True, timeout=60)
    assert run.returncode != 0 and b"too short" in run.stderr
    run = subprocess.run([exe], input=x.astype("<f4").tobytes() + b"\0\0\0\0",
                         capture_output=True, timeout=60)
    assert run.returncode != 0 and b"too long" in run.stderr


def test_export_needs_a_hybridized_call(tmp_path):
    net = nn.HybridSequential()
    net.add(nn.Dense(3))
    net.initialize()
    with pytest.raises(kiln.KilnError, match="hybridized and called once"):
        net.export(str(tmp_path / "m"))
    net.hybridize()
    with pytest.raises(kiln.KilnError, match="hybridized and called once"):
        net.export(str(tmp_path / "m"))


def test_export_after_a_direct_forward_call(tmp_path):
    """MXNet 1.x's net.forward(x) on a hybridized block runs its cached graph, as net(x)
    does, so export knows the input shapes after it (example/automatic-mixed-precision's
    amp_model_conversion.py calls forward, then export)."""
    import inspect

    class Scaled(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(3, in_units=4)

        def forward(self, x):
            return self.dense(x) * 2.0

    net = Scaled()
    net.initialize()
    x = np.array(onp.random.RandomState(0).standard_normal((2, 4)).astype("float32"))
    want = net.forward(x).asnumpy()     # not hybridized yet: the user's forward, eagerly
    net.hybridize()
    assert list(inspect.signature(net.forward).parameters) == ["x"]
    onp.testing.assert_allclose(net.forward(x).asnumpy(), want, rtol=1e-6)
    sym_file, params_file = net.export(str(tmp_path / "m"))
    back = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    onp.testing.assert_allclose(back(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    net.hybridize(active=False)
    assert "forward" not in net.__dict__


def test_export_epoch_in_file_name(exported, tmp_path):
    net, _, _, _ = exported["mlp"]
    sym, par = net.export(str(tmp_path / "m"), epoch=7)
    assert par.endswith("m-0007.params") and os.path.exists(par)
