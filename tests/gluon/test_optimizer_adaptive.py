"""AdaGrad, RMSProp and AdaDelta: against PyTorch's, and compiled steps against eager."""
import numpy as onp
import pytest

import kiln
from kiln import gluon, init, np
from kiln.fit import make_step
from kiln.gluon import nn
from kiln.optimizer import create

# kiln/MXNet name and params -> torch class name and params, with eps tiny enough that
# where it sits (inside or outside the square root) is below float32 noise
CASES = [
    ("adagrad", {"learning_rate": 0.1, "eps": 1e-10},
     "Adagrad", {"lr": 0.1, "eps": 1e-10}),
    ("rmsprop", {"learning_rate": 0.01, "gamma1": 0.9, "epsilon": 1e-10},
     "RMSprop", {"lr": 0.01, "alpha": 0.9, "eps": 1e-10}),
    ("rmsprop", {"learning_rate": 0.01, "rho": 0.8, "momentum": 0.5, "centered": True,
                 "epsilon": 1e-10},
     "RMSprop", {"lr": 0.01, "alpha": 0.8, "momentum": 0.5, "centered": True, "eps": 1e-10}),
    ("adadelta", {"rho": 0.9}, "Adadelta", {"lr": 1.0, "rho": 0.9, "eps": 1e-5}),
    ("adadelta", {"learning_rate": 0.5, "rho": 0.95, "wd": 0.01},
     "Adadelta", {"lr": 0.5, "rho": 0.95, "eps": 1e-5, "weight_decay": 0.01}),
]


@pytest.mark.parametrize("name, params, torch_name, torch_params", CASES)
def test_matches_torch(name, params, torch_name, torch_params):
    torch = pytest.importorskip("torch")
    rs = onp.random.RandomState(0)
    w0 = rs.randn(4, 3).astype(onp.float32)
    opt = create(name, **params)
    w = w0.copy()
    state = opt.create_state(0, w)
    tw = torch.nn.Parameter(torch.tensor(w0))
    topt = getattr(torch.optim, torch_name)([tw], **torch_params)
    for _ in range(6):
        g = rs.randn(4, 3).astype(onp.float32)
        opt.update(0, w, g, state)
        tw.grad = torch.tensor(g)
        topt.step()
    onp.testing.assert_allclose(w, tw.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, params", [
    ("adagrad", {"learning_rate": 0.1, "wd": 0.01}),
    ("rmsprop", {"learning_rate": 0.01, "gamma1": 0.9}),
    ("rmsprop", {"learning_rate": 0.01, "centered": True, "clip_gradient": 0.5}),
    ("adadelta", {"rho": 0.9}),
])
def test_compiled_step_matches_eager(name, params):
    rs = onp.random.RandomState(1)
    X = np.array(rs.randn(16, 5).astype(onp.float32))
    y = np.array(rs.randint(0, 3, 16).astype(onp.float32))
    nets = []
    for _ in range(2):
        net = nn.HybridSequential()
        net.add(nn.Dense(8, activation="relu"), nn.Dense(3))
        net.initialize(init.Constant(0.1))
        net(X)
        nets.append(net)
    for pa, pb in zip(nets[0].collect_params().values(), nets[1].collect_params().values()):
        pb.set_data(onp.random.RandomState(2).randn(*pa.shape).astype(onp.float32) * 0.3)
        pa.set_data(pb.data())
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    steps = [make_step(net, loss, gluon.Trainer(net.collect_params(), name, dict(params)),
                       compiled=compiled) for net, compiled in zip(nets, (False, True))]
    for _ in range(5):
        for step in steps:
            step(X, y)
    for pa, pb in zip(nets[0].collect_params().values(), nets[1].collect_params().values()):
        onp.testing.assert_allclose(pb.data().asnumpy(), pa.data().asnumpy(), rtol=1e-4,
                                    atol=1e-5)
    assert isinstance(kiln.optimizer.create(name), kiln.optimizer.Optimizer)


def test_rmsprop_state_is_a_tuple_as_mxnets():
    # MXNet 1.9.1's RMSProp.create_state: (n,) uncentered, (n, g, delta) centered
    from kiln.optimizer import RMSProp
    w = onp.ones((2, 3), onp.float32)
    assert len(RMSProp().create_state(0, w)) == 1
    assert len(RMSProp(centered=True).create_state(0, w)) == 3
