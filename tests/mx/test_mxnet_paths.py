"""MXNet 1.9.1's module paths and `mxnet.base` names that real code imports, under the alias."""
import importlib
import subprocess
import sys

import numpy as onp
import pytest

import kiln
from mx_alias_fixture import mx  # noqa: F401


def test_version_is_mxnets_and_kilns_stays(mx):
    assert mx.__version__ == "1.9.1" and mx.__kiln_version__ == kiln.__version__
    assert kiln.__version__ != "1.9.1"
    major, minor = (int(p) for p in mx.__version__.split(".")[:2])
    assert (1, 4) <= (major, minor) < (2, 0)


def test_base_names(mx):
    from mxnet.base import (MXNetError, NotImplementedForSymbol, _as_list, _Null,
                            integer_types, numeric_types, py_str, string_types)
    assert py_str(b"caf\xc3\xa9") == "café"
    assert isinstance(onp.float32(1), numeric_types) and isinstance(3, integer_types)
    assert isinstance("s", string_types) and repr(_Null) == "_Null"
    assert _as_list(3) == [3] and _as_list((1, 2)) == (1, 2)
    with pytest.raises(MXNetError):
        kiln.np.ones((2, 3)) + kiln.np.ones((4,))
    err = NotImplementedForSymbol(test_base_names, "_plus", 1)
    assert isinstance(err, MXNetError) and 'namely operator "_plus"' in str(err)
    assert mx.base is importlib.import_module("mxnet.base") is mx.error


@pytest.mark.parametrize("path, name, kiln_value", [
    ("mxnet.ndarray.ndarray", "NDArray", lambda: kiln.nd.NDArray),
    ("mxnet.symbol.symbol", "Symbol", lambda: kiln.sym.Symbol),
    ("mxnet.symbol.numpy", "_Symbol", lambda: kiln.sym.Symbol),
    ("mxnet.symbol.numpy.linalg", "norm", lambda: kiln.np.linalg.norm),
    ("mxnet.symbol.numpy.random", "uniform", lambda: kiln.np.random.uniform),
    ("mxnet.numpy.multiarray", "ndarray", lambda: kiln.np.ndarray),
    ("mxnet.numpy.random", "multinomial", lambda: kiln.np.random.multinomial),
    ("mxnet.io.io", "NDArrayIter", lambda: kiln.io.NDArrayIter),
    ("mxnet.optimizer.optimizer", "SGD", lambda: kiln.optimizer.SGD),
    ("mxnet.gluon.model_zoo.model_store", "get_model_file",
     lambda: kiln.gluon.model_zoo.model_store.get_model_file),
    ("mxnet.gluon.contrib.nn.basic_layers", "Identity", lambda: kiln.gluon.contrib.nn.Identity),
])
def test_module_paths_resolve(mx, path, name, kiln_value):
    assert getattr(importlib.import_module(path), name) is kiln_value()


def test_importing_a_submodule_keeps_kilns_name_of_the_same_name(mx):
    # mxnet.ndarray.ndarray is a module in MXNet; kiln.nd.ndarray is the array class
    from mxnet.ndarray.ndarray import NDArray
    assert NDArray is kiln.nd.ndarray and isinstance(kiln.nd.ndarray, type)


def test_symbol_numpy_computes_as_kiln_np(mx):
    onp.testing.assert_array_equal(mx.sym.np.ones((2,)).asnumpy(), [1.0, 1.0])
    from mxnet.symbol.numpy import _Symbol
    assert isinstance(mx.sym.var("x"), _Symbol) and not isinstance(mx.np.ones(2), _Symbol)


def test_gluon_repo_url_follows_mxnet_gluon_repo(mx, monkeypatch):
    from mxnet.gluon.utils import _get_repo_file_url, _get_repo_url
    monkeypatch.delenv("MXNET_GLUON_REPO", raising=False)
    assert _get_repo_url() == "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"
    monkeypatch.setenv("MXNET_GLUON_REPO", "http://mirror/x")
    assert _get_repo_file_url("gluon/models", "a.zip") == "http://mirror/x/gluon/models/a.zip"
    from mxnet.gluon.model_zoo.model_store import _model_sha1
    assert _model_sha1["resnet18_v1"].startswith("a0666292")


def test_registry_factories(mx):
    from mxnet import registry

    class Base:
        pass

    register = registry.get_register_func(Base, "thing")
    alias = registry.get_alias_func(Base, "thing")
    create = registry.get_create_func(Base, "thing")

    @alias("widget", "gadget")
    class Widget(Base):
        def __init__(self, size=1):
            self.size = size
    register(Widget)
    assert create("Widget", size=3).size == 3 and create('["gadget", {"size": 4}]').size == 4
    assert create({"thing": "widget"}).size == 1
    w = Widget()
    assert create(w) is w and set(registry.get_registry(Base)) == {"widget", "gadget"}
    with pytest.raises(kiln.KilnError, match="not registered"):
        create("nope")
    with pytest.raises(kiln.KilnError, match="subclass of Base"):
        register(int)


def test_missing_path_still_names_mxnet(mx):
    with pytest.raises(ModuleNotFoundError, match="mxnet.no_such_module"):
        importlib.import_module("mxnet.no_such_module")


def test_dataloader_batchify_names(mx):
    from mxnet.gluon.data.dataloader import default_batchify_fn, default_mp_batchify_fn
    batch = default_mp_batchify_fn([(onp.ones(2), 1), (onp.zeros(2), 0)])
    assert default_mp_batchify_fn is default_batchify_fn
    assert batch[0].shape == (2, 2) and batch[1].asnumpy().tolist() == [1, 0]


@pytest.mark.parametrize("path, why", [
    ("mxnet.module.python_module", "PythonModule"),
    ("mxnet._ffi.base", "no C library"),
])
def test_paths_kiln_does_without_say_why(mx, path, why):
    with pytest.raises(ModuleNotFoundError, match=why) as info:
        importlib.import_module(path)
    assert path.startswith(info.value.name)   # the first missing module on the path


def test_module_level_names_of_mxnet_ndarray_and_the_mx_that_test_utils_leaks():
    """test_ndarray/test_gluon import py_slice and _STORAGE_TYPE_STR_TO_ID from
    mxnet.ndarray.ndarray; `from mxnet.test_utils import *` must leak the mxnet module
    itself (test_operator decorates with @mx.use_np_shape)."""
    code = ("import kiln.mx.alias as a; a.install()\n"
            "import mxnet\n"
            "from mxnet.ndarray.ndarray import py_slice, _STORAGE_TYPE_STR_TO_ID\n"
            "from mxnet.test_utils import *\n"
            "assert py_slice is slice and _STORAGE_TYPE_STR_TO_ID['csr'] == 2\n"
            "assert mx is mxnet and callable(mx.use_np_shape)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
