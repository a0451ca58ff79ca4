"""Every module path that worked before kiln's modules moved into packages still works.

fixtures/module_paths_717677d.json lists every `kiln.*` module path that imported at
commit 717677d (before kiln/_core, kiln/mx and the other moves), and every `mxnet.*` path
that imported through the alias; `python tests/test_public_paths.py ROOT OUT.json` made it
from a checkout of that commit. Today each still imports: public paths (kiln.nd,
kiln.image, ...) silently, old private ones (kiln.nd_api, ...) with a DeprecationWarning
that names the new path; and an alias is the very module object of its new path.
"""
import importlib
import json
import os
import subprocess
import sys

import pytest

from seed_cells import seed_text, cell

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LISTED = os.path.join(os.path.dirname(__file__), "fixtures", "module_paths_717677d.json")


def _probe(root):
    """Every kiln.* module path of the checkout at `root` that imports, and every mxnet.*
    path that imports through the alias (run in a fresh process on that checkout)."""
    import warnings
    warnings.simplefilter("ignore")
    names = ["kiln.nd", "kiln.sym", "kiln.ndarray.contrib", "kiln.ndarray.random",
             "kiln.ndarray.linalg", "kiln.symbol.contrib"]
    for d, _, files in os.walk(os.path.join(root, "kiln")):
        for f in files:
            if f.endswith(".py") and f != "__main__.py":
                m = os.path.relpath(os.path.join(d, f), root)[:-3].replace(os.sep, ".")
                names.append(m[:-9] if m.endswith(".__init__") else m)
    found = {"kiln": [], "mxnet": []}
    for m in sorted(set(names) - {"kiln.fuzz.child"}):
        try:
            importlib.import_module(m)
            found["kiln"].append(m)
        except Exception:
            pass
    try:
        from kiln.mxnet_alias import install
    except ImportError:
        from kiln.mx.alias import install
    install()
    renamed = ["numpy", "numpy_extension", "ndarray", "symbol", "module", "device",
               "initializer", "kv", "viz", "img", "rnd", "mon", "nd", "sym", "mod",
               "ndarray.contrib", "ndarray.random", "ndarray.linalg", "ndarray.sparse",
               "symbol.contrib", "symbol.random", "gluon.model_zoo.vision", "numpy.random",
               "numpy.linalg", "ndarray.image", "contrib.ndarray", "contrib.symbol",
               "contrib.onnx", "contrib.autograd", "contrib.io"]
    candidates = ["mxnet"] + ["mxnet." + m[5:] for m in found["kiln"]]
    for m in sorted(set(candidates + ["mxnet." + r for r in renamed])):
        try:
            importlib.import_module(m)
            found["mxnet"].append(m)
        except Exception:
            pass
    return found


def _listed():
    with open(LISTED) as f:
        return json.load(f)


def _run(code):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


def test_every_listed_kiln_path_imports_as_the_module_it_names():
    code = """
import importlib, json, sys, warnings
listed = json.load(open(%r))
failed, loud = [], []
for name in listed["kiln"]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            failed.append(f"{name}: {exc!r}")
            continue
    notes = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)
             and name in str(w.message)]
    if module.__name__ != name:                 # an alias: the real module, not a copy
        if sys.modules[module.__name__] is not module:
            failed.append(f"{name}: not the module object of {module.__name__}")
        import kiln.mx.alias as alias
        if name in alias.MOVED and not any(module.__name__ in n for n in notes):
            loud.append(f"{name}: no DeprecationWarning naming {module.__name__}")
        if name in alias.FACES and notes:
            loud.append(f"{name}: a public path warns: {notes}")
print(json.dumps(failed + loud))
""" % LISTED
    done = _run(code)
    assert done.returncode == 0, done.stderr[-3000:]
    problems = json.loads(done.stdout.strip().splitlines()[-1])
    assert problems == [], "\n".join(problems)


def test_every_listed_mxnet_path_imports_through_the_alias():
    code = """
import importlib, json, warnings
warnings.simplefilter("ignore")
import kiln.mxnet_alias as alias
alias.install()
failed = []
for name in json.load(open(%r))["mxnet"]:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{name}: {exc!r}")
print(json.dumps(failed))
""" % LISTED
    done = _run(code)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_array_classes_under_every_name():
    import kiln
    from kiln import np, nd
    cls = type(np.ones(2))      # the core's class; nd's is MXNet 1.x's NDArray, a subclass
    assert cls is np.ndarray and nd.NDArray is kiln.ndarray.ndarray is kiln.nd.ndarray
    assert issubclass(nd.NDArray, np.ndarray) and type(nd.ones((2,))) is nd.NDArray
    assert isinstance(nd.ones((2,)), np.ndarray) and isinstance(np.zeros(3), nd.NDArray)
    assert isinstance(kiln.sym.var("x"), kiln.sym.Symbol)
    assert isinstance(nd.array([1, 2]), kiln.gluon.tensor_types)


def test_seed_003_runs_as_written_through_python_m_kiln_mxnet(tmp_path):
    """The seed's MXNet script (hybridize, export, load back, Module), unmodified: `import
    mxnet` resolves to kiln through the alias."""
    text = seed_text("003")
    if text is None:
        pytest.skip("the seed documents (../shared/seeds) are not here")
    parts = [cell(text, "from mxnet import nd,sym", keep_mxnet=True),
             cell(text, "def benchmark(net,x):", keep_mxnet=True),
             cell(text, "def benchmark(net,x):", after="调用hybridize后需要的时间:0.7565 秒",
                  keep_mxnet=True),
             cell(text, "import mxnet as mx", keep_mxnet=True),
             cell(text, "class HybridNet(nn.HybridBlock):", keep_mxnet=True)]
    script = tmp_path / "seed003.py"
    script.write_text("\n\n".join(parts) + "\nprint('SEED-003-DONE', out[0].shape)\n")
    done = subprocess.run([sys.executable, "-m", "kiln", "mxnet", str(script)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "SEED-003-DONE (3, 2)" in done.stdout
    assert (tmp_path / "tony_mlp-symbol.json").exists()
    assert "import mxnet" in script.read_text()      # it ran as MXNet code, not rewritten


def test_the_d2l_library_imports_through_the_alias():
    pytest.importorskip("d2l")
    done = _run("import kiln.mxnet_alias as a; a.install()\n"
                "from d2l import mxnet as d2l\n"
                "from mxnet import np, npx\n"
                "print(type(d2l.tensor([1.0])).__module__, callable(d2l.train_ch13))")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["kiln._core.ndarray", "True"]


if __name__ == "__main__":      # python tests/test_public_paths.py ROOT OUT.json
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    with open(sys.argv[2], "w") as out:
        json.dump(_probe(os.path.abspath(sys.argv[1])), out, indent=1)
