"""The d2l book's (MXNet edition) "Builders' Guide" programs, with `mxnet` -> `kiln`."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import np, npx, init
from kiln.gluon import nn


@pytest.fixture(autouse=True, scope="module")
def _numpy_shape_mode():
    npx.set_np()        # as the book's first cell does; kiln.mx's shape mode is global
    yield
    npx.reset_np()      # MXNet 1.x's legacy default again for the test modules after this


# ---- 6.1 Layers and Modules --------------------------------------------------------------
class MLP(nn.Block):
    def __init__(self):
        # Call the constructor of the `MLP` parent class `Block` to perform the necessary
        # initialization
        super().__init__()
        self.hidden = nn.Dense(256, activation='relu')  # Hidden layer
        self.out = nn.Dense(10)  # Output layer

    # Define the forward propagation of the model, that is, how to return the required
    # model output based on the input `X`
    def forward(self, X):
        return self.out(self.hidden(X))


class MySequential(nn.Block):
    def add(self, block):
        # Here, `block` is an instance of a `Block` subclass, and we assume that it has a
        # unique name. We save it in the member variable `_children` of the `Block` class
        self._children[block.name] = block

    def forward(self, X):
        # OrderedDict guarantees that members will be traversed in the order they were added
        for block in self._children.values():
            X = block(X)
        return X


class MySequentialIdx(nn.Block):
    def __init__(self, *args):
        super().__init__()
        for idx, module in enumerate(args):
            self._children[str(idx)] = module

    def forward(self, X):
        for block in self._children.values():
            X = block(X)
        return X


class FixedHiddenMLP(nn.Block):
    def __init__(self):
        super().__init__()
        # Random weight parameters created with the `get_constant` function are not updated
        # during training (i.e., constant parameters)
        self.rand_weight = self.params.get_constant(
            'rand_weight', np.random.uniform(size=(20, 20)))
        self.dense = nn.Dense(20, activation='relu')

    def forward(self, X):
        X = self.dense(X)
        # Use the created constant parameters, as well as the `relu` and `dot` functions
        X = npx.relu(np.dot(X, self.rand_weight.data()) + 1)
        # Reuse the fully connected layer. This is equivalent to sharing parameters with two
        # fully connected layers
        X = self.dense(X)
        return X.sum()


class NestMLP(nn.Block):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.net = nn.Sequential()
        self.net.add(nn.Dense(64, activation='relu'),
                     nn.Dense(32, activation='relu'))
        self.dense = nn.Dense(16, activation='relu')

    def forward(self, X):
        return self.dense(self.net(X))


def test_layers_and_modules():
    net = nn.Sequential()
    net.add(nn.Dense(256, activation='relu'))
    net.add(nn.Dense(10))
    net.initialize()
    X = np.random.uniform(size=(2, 20))
    assert net(X).shape == (2, 10)

    net = MLP()
    net.initialize()
    assert net(X).shape == (2, 10)
    assert list(net.collect_params()) == ['hidden.weight', 'hidden.bias', 'out.weight',
                                          'out.bias']

    net = MySequential()
    net.add(nn.Dense(256, activation='relu'))
    net.add(nn.Dense(10))
    net.initialize()
    assert net(X).shape == (2, 10)
    assert len(net.collect_params()) == 4

    net = MySequentialIdx(nn.Dense(256, activation='relu'), nn.Dense(10))
    net.initialize()
    assert net(X).shape == (2, 10)
    assert list(net.collect_params())[:2] == ['0.weight', '0.bias']

    net = FixedHiddenMLP()
    net.initialize()
    out = net(X)
    assert out.shape == ()
    assert net.rand_weight.grad_req == 'null'
    assert 'rand_weight' in net.collect_params()

    chimera = nn.Sequential()
    chimera.add(NestMLP(), nn.Dense(20), FixedHiddenMLP())
    chimera.initialize()
    assert chimera(X).shape == ()
    assert '0.net.1.weight' in chimera.collect_params()


# ---- 6.2 Parameter Management ------------------------------------------------------------
def test_parameter_management(capsys):
    net = nn.Sequential()
    net.add(nn.Dense(8, activation='relu'))
    net.add(nn.Dense(1))
    net.initialize()  # Use the default initialization method

    X = np.random.uniform(size=(2, 4))
    net(X)  # Forward computation

    print(net[1].params)
    print(type(net[1].bias))
    print(net[1].bias)
    print(net[1].bias.data())
    assert net[1].weight.grad().shape == (1, 8)
    print(net[0].collect_params())
    print(net.collect_params())
    text = capsys.readouterr().out
    assert "'weight': Parameter (shape=(1, 8), dtype=float32)" in text
    assert "Parameter (shape=(1,), dtype=float32)" in text
    assert "'1.bias'" in text
    assert onp.allclose(net.collect_params()['1.bias'].data().asnumpy(), 0)

    def block1():
        net = nn.Sequential()
        net.add(nn.Dense(32, activation='relu'))
        net.add(nn.Dense(16, activation='relu'))
        return net

    def block2():
        net = nn.Sequential()
        for _ in range(4):
            # Nested here
            net.add(block1())
        return net

    rgnet = nn.Sequential()
    rgnet.add(block2())
    rgnet.add(nn.Dense(10))
    rgnet.initialize()
    assert rgnet(X).shape == (2, 10)
    assert rgnet[0][1][0].bias.data().shape == (32,)
    assert '0.1.0.bias' in rgnet.collect_params()
    assert 'Sequential(' in repr(rgnet) and '(3): Sequential(' in repr(rgnet)

    # Parameter initialization
    net.initialize(init=init.Normal(sigma=0.01), force_reinit=True)
    assert abs(float(net[0].weight.data().std()) - 0.01) < 0.008
    assert float(np.abs(net[0].bias.data()).sum()) == 0

    net.initialize(init=init.Constant(1), force_reinit=True)
    assert (net[0].weight.data()[0] == 1).all()

    net[0].weight.initialize(init=init.Xavier(), force_reinit=True)
    net[1].initialize(init=init.Constant(42), force_reinit=True)
    assert onp.all(net[1].weight.data().asnumpy() == 42)
    bound = (6 / (4 + 8)) ** 0.5
    assert onp.abs(net[0].weight.data().asnumpy()).max() <= bound


class MyInit(init.Initializer):
    def _init_weight(self, name, data):
        print('Init', name, data.shape)
        data[:] = np.random.uniform(-10, 10, data.shape)
        data *= np.abs(data) >= 5


def test_custom_initializer_and_direct_writes(capsys):
    net = nn.Sequential()
    net.add(nn.Dense(8, activation='relu'))
    net.add(nn.Dense(1))
    net.initialize(MyInit(), force_reinit=True)
    net(np.random.uniform(size=(2, 4)))
    printed = capsys.readouterr().out
    assert 'Init 0.weight (8, 4)' in printed and 'Init 1.weight (1, 8)' in printed
    w = net[0].weight.data().asnumpy()
    assert onp.all((w == 0) | (onp.abs(w) >= 5))
    assert (w == 0).any() and (w != 0).any()

    net[0].weight.data()[:] += 1
    net[0].weight.data()[0, 0] = 42
    w2 = net[0].weight.data()
    assert float(w2[0, 0]) == 42
    assert onp.allclose(w2.asnumpy()[1:], w[1:] + 1)
    # the parameter still trains after the writes
    with autograd.record():
        y = net(np.ones((2, 4))).sum()
    y.backward()
    assert net[0].weight.grad().shape == (8, 4)


def test_tied_parameters():
    net = nn.Sequential()
    # We need to give the shared layer a name so that we can refer to its parameters
    shared = nn.Dense(8, activation='relu')
    net.add(nn.Dense(8, activation='relu'),
            shared,
            nn.Dense(8, activation='relu').share_parameters(shared.params),
            nn.Dense(10))
    net.initialize()

    X = np.random.uniform(size=(2, 20))
    net(X)

    # Check whether the parameters are the same
    assert (net[1].weight.data()[0] == net[2].weight.data()[0]).all()
    net[1].weight.data()[0, 0] = 100
    # Make sure that they are actually the same object rather than just having the same value
    assert (net[1].weight.data()[0] == net[2].weight.data()[0]).all()
    assert net[1].weight is net[2].weight


# ---- 6.3 Lazy Initialization -------------------------------------------------------------
def test_lazy_initialization():
    net = nn.Sequential()
    net.add(nn.Dense(256, activation='relu'))
    net.add(nn.Dense(10))
    text = repr(net.collect_params())
    assert '(256, 0)' in text
    net.initialize()
    assert net.collect_params()['0.weight'].shape == (256, 0)
    X = np.random.uniform(size=(2, 20))
    net(X)
    assert net.collect_params()['0.weight'].shape == (256, 20)
    assert net.collect_params()['1.weight'].shape == (10, 256)


# ---- 6.5 Custom Layers -------------------------------------------------------------------
class CenteredLayer(nn.Block):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def forward(self, X):
        return X - X.mean()


class MyDense(nn.Block):
    def __init__(self, units, in_units, **kwargs):
        super().__init__(**kwargs)
        self.weight = self.params.get('weight', shape=(in_units, units))
        self.bias = self.params.get('bias', shape=(units,))

    def forward(self, x):
        linear = np.dot(x, self.weight.data(ctx=x.ctx)) + self.bias.data(ctx=x.ctx)
        return npx.relu(linear)


def test_custom_layers():
    layer = CenteredLayer()
    out = layer(np.array([1, 2, 3, 4, 5]))
    assert onp.allclose(out.asnumpy(), [-2, -1, 0, 1, 2])

    net = nn.Sequential()
    net.add(nn.Dense(128), CenteredLayer())
    net.initialize()
    Y = net(np.random.uniform(size=(4, 8)))
    assert abs(float(Y.mean())) < 1e-5

    dense = MyDense(units=3, in_units=5)
    assert list(dense.params) == ['weight', 'bias']
    dense.initialize()
    assert dense(np.random.uniform(size=(2, 5))).shape == (2, 3)

    net = nn.Sequential()
    net.add(MyDense(8, in_units=64),
            MyDense(1, in_units=8))
    net.initialize()
    assert net(np.random.uniform(size=(2, 64))).shape == (2, 1)
    assert list(net.collect_params()) == ['0.weight', '0.bias', '1.weight', '1.bias']


# ---- 6.6 File I/O ------------------------------------------------------------------------
def test_file_io(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    x = np.arange(4)
    npx.save('x-file', x)
    x2 = npx.load('x-file')
    assert onp.array_equal(x2[0].asnumpy(), x.asnumpy())

    y = np.zeros(4)
    npx.save('x-files', [x, y])
    x2, y2 = npx.load('x-files')
    assert onp.array_equal(y2.asnumpy(), y.asnumpy())

    mydict = {'x': x, 'y': y}
    npx.save('mydict', mydict)
    mydict2 = npx.load('mydict')
    assert sorted(mydict2) == ['x', 'y']

    net = MLP()
    net.initialize()
    X = np.random.uniform(size=(2, 20))
    Y = net(X)
    net.save_parameters('mlp.params')

    clone = MLP()
    clone.load_parameters('mlp.params')
    Y_clone = clone(X)
    assert (Y_clone == Y).all()
