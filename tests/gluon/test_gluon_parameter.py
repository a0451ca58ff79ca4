"""Parameter, Constant, ParameterDict and kiln.init."""
import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import np, init
from kiln.gluon import Parameter, Constant, nn
from kiln.gluon.parameter import ParameterNotInitializedError, DeferredInitializationError


def test_data_is_one_object_and_writes_go_through():
    p = Parameter("weight", shape=(2, 3))
    p.initialize(init=init.Constant(1.0))
    assert p.data() is p.data()
    p.data()[:] += 1
    p.data()[0, 0] = 42
    expected = onp.full((2, 3), 2.0, onp.float32)
    expected[0, 0] = 42
    assert onp.array_equal(p.data().asnumpy(), expected)
    assert p.list_data()[0] is p.data()
    assert p.grad() is p.data().grad and p.list_grad()[0] is p.grad()
    assert p.list_ctx() == [kiln.cpu()] and p.data(ctx=kiln.cpu()) is p.data()


def test_set_data_keeps_the_array_and_checks_shape():
    p = Parameter("weight", shape=(2, 2))
    p.initialize()
    arr = p.data()
    p.set_data(np.ones((2, 2)))
    assert p.data() is arr and float(arr.sum()) == 4
    with pytest.raises(kiln.KilnError, match="cannot change shape"):
        p.set_data(np.ones((3, 2)))


def test_uninitialized_and_deferred_errors_name_the_parameter():
    net = nn.Dense(4, in_units=3)
    with pytest.raises(ParameterNotInitializedError, match=r"'weight'.*initialize\(\)"):
        net(np.ones((2, 3)))
    net2 = nn.Sequential()
    net2.add(nn.Dense(4))
    net2.initialize()
    with pytest.raises(DeferredInitializationError, match=r"'0\.weight'.*\(4, 0\)"):
        net2[0].weight.data()
    assert isinstance(DeferredInitializationError("x"), kiln.KilnError)


def test_grad_req_null_write_add_and_zero_grad():
    p = Parameter("weight", shape=(3,))
    p.initialize(init="ones")
    x = p.data()
    for _ in range(2):
        with autograd.record():
            y = (x * 2).sum()
        y.backward()
    assert onp.allclose(p.grad().asnumpy(), 2)           # 'write' overwrites
    p.grad_req = "add"
    for _ in range(2):
        with autograd.record():
            y = (p.data() * 2).sum()
        y.backward()
    assert onp.allclose(p.grad().asnumpy(), 4)           # 'add' accumulates
    p.zero_grad()
    assert onp.allclose(p.grad().asnumpy(), 0)
    p.grad_req = "null"
    with pytest.raises(kiln.KilnError, match="grad_req"):
        p.grad()
    assert Parameter("b", differentiable=False).grad_req == "null"


def test_reinitialize_warns_and_force_reinit_keeps_object():
    p = Parameter("weight", shape=(2, 2))
    p.initialize(init=init.Zero())
    arr = p.data()
    with pytest.warns(UserWarning, match="already initialized"):
        p.initialize(init=init.One())
    assert float(arr.sum()) == 0
    p.initialize(init=init.One(), force_reinit=True)
    assert p.data() is arr and float(arr.sum()) == 4
    net = nn.Dense(2, in_units=2)
    net.initialize()
    with pytest.warns(UserWarning, match="force_reinit"):
        net.initialize()


def test_cast_and_lr_wd_mult():
    p = Parameter("weight", shape=(2,), lr_mult=0.5, wd_mult=0.0)
    p.initialize()
    p.cast("float64")
    assert p.dtype == onp.float64 and p.data().dtype == onp.float64
    assert p.lr_mult == 0.5 and p.wd_mult == 0.0
    assert "Parameter (shape=(2,), dtype=float64)" == repr(p)


def test_constant():
    c = Constant("c", np.array([1.0, 2.0]))
    assert c.grad_req == "null"
    c.initialize()
    assert onp.array_equal(c.data().asnumpy(), [1, 2])
    c.initialize(init=init.Zero(), force_reinit=True)   # a constant ignores initializers
    assert onp.array_equal(c.data().asnumpy(), [1, 2])


def test_initializers_by_name_and_alias():
    for name, value in [("zeros", 0.0), ("ones", 1.0), ("zero", 0.0), ("one", 1.0)]:
        p = Parameter("weight", shape=(3,))
        p.initialize(init=name)
        assert onp.all(p.data().asnumpy() == value)
    # suffix dispatch of a default initializer: biases zero, gammas one
    for pname, value in [("bias", 0.0), ("gamma", 1.0), ("beta", 0.0),
                         ("running_var", 1.0), ("running_mean", 0.0)]:
        p = Parameter(pname, shape=(4,))
        p.initialize(default_init=init.Normal(1.0))
        assert onp.all(p.data().asnumpy() == value), pname
    with pytest.raises(kiln.KilnError, match="unknown initializer"):
        init.create("nosuchinit")


def test_random_initializers_statistics():
    np.random.seed(0)
    p = Parameter("weight", shape=(200, 300))
    p.initialize(init=init.Uniform(0.5))
    w = p.data().asnumpy()
    assert w.min() >= -0.5 and w.max() <= 0.5 and w.std() > 0.25
    p.initialize(init=init.Normal(0.2), force_reinit=True)
    assert abs(p.data().asnumpy().std() - 0.2) < 0.01
    p.initialize(init=init.Xavier(), force_reinit=True)
    bound = onp.sqrt(3.0 / ((200 + 300) / 2))
    w = p.data().asnumpy()
    assert onp.abs(w).max() <= bound and onp.abs(w).max() > 0.9 * bound
    p.initialize(init=init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2),
                 force_reinit=True)
    assert abs(p.data().asnumpy().std() - onp.sqrt(2.0 / 300)) < 0.005
    p.initialize(init=init.MSRAPrelu(), force_reinit=True)
    assert abs(p.data().asnumpy().std() - onp.sqrt(2 / 1.0625 / 250)) < 0.01
    q = Parameter("weight", shape=(4, 4))
    q.initialize(init=init.Orthogonal(scale=1.0))
    m = q.data().asnumpy()
    assert onp.allclose(m @ m.T, onp.eye(4), atol=1e-5)
    with pytest.raises(kiln.KilnError, match="2 dimensions"):
        Parameter("weight", shape=(4,)).initialize(init=init.Xavier())


def test_seed_makes_initialization_repeatable():
    def build():
        np.random.seed(7)
        net = nn.Dense(3, in_units=4)
        net.initialize()
        return net.weight.data().asnumpy()
    assert onp.array_equal(build(), build())


def test_register_custom_initializer():
    @init.register
    class FortyTwo(init.Initializer):
        def _init_weight(self, name, data):
            data[:] = 42

    p = Parameter("weight", shape=(2,))
    p.initialize(init="fortytwo")
    assert onp.all(p.data().asnumpy() == 42)
    assert isinstance(init.create(FortyTwo), FortyTwo)


def test_mixed_initializer():
    net = nn.Dense(3, in_units=2)
    net.initialize(init.Mixed([".*bias", ".*"], [init.One(), init.Constant(5)]))
    assert onp.all(net.weight.data().asnumpy() == 5)


def test_parameter_dict_helpers():
    net = nn.Sequential()
    net.add(nn.Dense(4, in_units=3), nn.BatchNorm(in_channels=4))
    net.initialize()
    params = net.collect_params()
    params.setattr("grad_req", "null")
    assert all(p.grad_req == "null" for p in params.values())
    params.setattr("grad_req", "write")
    assert net[1].running_mean.grad_req == "null"      # never differentiable
    assert list(net.collect_params(".*weight")) == ["0.weight"]
    assert list(net.collect_params("1.*")) == ["1.gamma", "1.beta", "1.running_mean",
                                               "1.running_var"]
    assert params.get("0.weight") is net[0].weight
    assert params.get("nope") is None
    params.reset_ctx(kiln.cpu())
    params.zero_grad()


def test_standalone_parameter_dict_with_a_prefix(tmp_path):
    # MXNet 1.x's ParameterDict(prefix): get() makes prefix + name (MXNet's test_parameter_dict)
    from kiln.gluon import ParameterDict
    from kiln.mx.nd import cpu
    params = ParameterDict("net_")
    w0 = params.get("w0", shape=(2, 2))
    assert params.get("w0") is w0
    params.get("w1", shape=(2, 2))
    assert list(params.keys()) == ["net_w0", "net_w1"]
    params.initialize(ctx=cpu(1))
    params.reset_ctx([cpu(4), cpu(2)])
    assert set(params.list_ctx()) == {cpu(4), cpu(2)}


def test_loading_with_the_saved_dtype_replaces_the_array(tmp_path):
    from kiln.gluon import ParameterDict
    saved = ParameterDict("")
    saved.get("w", shape=(2, 2), dtype="float32")
    saved.initialize(init.One())
    path = str(tmp_path / "p.params")
    saved.save(path)
    loaded = ParameterDict("")
    loaded.get("w", shape=(2, 2), dtype="float16")
    loaded.load(path, cast_dtype=True, dtype_source="current")
    assert loaded["w"].data().dtype == onp.float16
    loaded.load(path, cast_dtype=True, dtype_source="saved")      # as MXNet: float32 again
    assert loaded["w"].data().dtype == onp.float32


def test_data_and_grad_report_the_context_asked_for():
    # MXNet 1.9.1 (test_gluon.py's test_parameter): data(cpu(1)).context == cpu(1), one entry
    # per context in list_data/list_grad, reset_ctx changes list_ctx
    p = Parameter("weight", shape=(10, 10))
    p.initialize(init="xavier", ctx=[kiln.cpu(0), kiln.cpu(1)])
    assert [d.context for d in p.list_data()] == [kiln.cpu(0), kiln.cpu(1)]
    assert len(p.list_grad()) == 2 and p.grad(kiln.cpu(1)).context == kiln.cpu(1)
    assert p.data(kiln.cpu(0)) is p.data()
    assert (p.data(kiln.cpu(1)).asnumpy() == p.data().asnumpy()).all()
    with autograd.record():
        y = (p.data(kiln.cpu(1)) * 2).sum()
    y.backward()
    assert (p.grad().asnumpy() == 2).all()       # the one shared copy gets the gradient
    p.reset_ctx(ctx=[kiln.cpu(1), kiln.cpu(2)])
    assert p.list_ctx() == [kiln.cpu(1), kiln.cpu(2)]
