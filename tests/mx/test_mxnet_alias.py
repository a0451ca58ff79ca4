"""kiln.mxnet_alias: `import mxnet` (and mxnet.X.Y) resolves to kiln's modules."""
import os
import subprocess
import sys
import types

import pytest

import kiln
from kiln.mx import alias as mxnet_alias


@pytest.fixture
def alias():
    assert mxnet_alias.install()
    yield
    mxnet_alias.uninstall()


def test_modules_are_kilns_own(alias):
    import mxnet
    import mxnet.numpy
    import mxnet.gluon.nn
    from mxnet import autograd, context, gluon, init, np, npx
    from mxnet.gluon.data.vision import transforms
    assert np is kiln.np and mxnet.numpy is kiln.np and npx is kiln.npx
    assert mxnet.gluon.nn is kiln.gluon.nn and gluon is kiln.gluon
    assert autograd is kiln.autograd and init is kiln.init and context is kiln.context
    assert transforms is kiln.gluon.data.vision.transforms
    assert mxnet.cpu() == kiln.cpu() and mxnet.__kiln_alias__


def test_renamed_submodules_resolve(alias):
    import importlib
    assert importlib.import_module("mxnet.numpy_extension") is kiln.npx
    assert importlib.import_module("mxnet.numpy.random") is kiln.np.random
    assert importlib.import_module("mxnet.device") is kiln.context


def test_aliasing_does_not_add_mxnet_names_to_kiln(alias):
    import mxnet.numpy  # noqa: F401  (the import system sets mxnet.numpy on the parent)
    assert "numpy" not in vars(kiln)


def test_missing_names_fail_clearly(alias):
    import mxnet
    with pytest.raises(AttributeError, match="kiln does not implement mxnet.no_such_thing"):
        mxnet.no_such_thing
    with pytest.raises(ModuleNotFoundError, match="mxnet.gluon.no_such_module"):
        import mxnet.gluon.no_such_module  # noqa: F401


def test_real_mxnet_already_imported_is_left_alone(monkeypatch):
    real = types.ModuleType("mxnet")
    monkeypatch.setitem(sys.modules, "mxnet", real)
    assert mxnet_alias.install() is False
    assert not mxnet_alias.is_installed()
    import mxnet
    assert mxnet is real


def test_new_kiln_modules_are_picked_up(alias, monkeypatch):
    # a module kiln gains later is reachable under mxnet with no change to the alias
    probe = types.ModuleType("kiln._alias_probe")
    probe.VALUE = 42
    monkeypatch.setitem(sys.modules, "kiln._alias_probe", probe)
    import mxnet._alias_probe
    assert mxnet._alias_probe is probe


def _env():
    root = os.path.dirname(os.path.dirname(kiln.__file__))
    return dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_command_runs_an_unmodified_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import sys\nimport mxnet as mx\nfrom mxnet import np, npx\n"
                      "print(type(np.ones(2)).__module__, sys.argv[1:])\n")
    out = subprocess.run([sys.executable, "-m", "kiln", "mxnet", str(script), "--epochs", "1"],
                         capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "kiln._core.ndarray ['--epochs', '1']"


def test_submodules_of_module_namespaces_import(tmp_path):
    """`import mxnet.ndarray.contrib`: kiln.nd is a module, its `contrib` another module."""
    code = ("import kiln.mxnet_alias as a; a.install()\n"
            "import mxnet.ndarray.contrib as c, mxnet.ndarray.linalg as l\n"
            "import mxnet.symbol.contrib as s\n"
            "from mxnet.ndarray import random\n"
            "print(c.__name__, l.__name__, s.__name__, random.__name__)\n"
            "try:\n    import mxnet.ndarray.nosuch\nexcept ModuleNotFoundError as e:\n"
            "    print('missing', e.name)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(tmp_path), env=_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["kiln.mx.nd.contrib", "kiln.mx.nd.linalg",
                                  "kiln.mx.nd.contrib", "kiln.mx.nd.random", "missing",
                                  "mxnet.ndarray.nosuch"]
