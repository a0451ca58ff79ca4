"""The d2l book's (MXNet edition) convolution chapters, with `mxnet` -> `kiln`."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import np, npx
from kiln.gluon import nn


@pytest.fixture(autouse=True, scope="module")
def _numpy_shape_mode():
    npx.set_np()        # as the book's first cell does; kiln.mx's shape mode is global
    yield
    npx.reset_np()      # MXNet 1.x's legacy default again for the test modules after this


# ---- 7.2 Convolutions for Images ---------------------------------------------------------
def corr2d(X, K):
    """Compute 2D cross-correlation."""
    h, w = K.shape
    Y = np.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[i, j] = (X[i:i + h, j:j + w] * K).sum()
    return Y


class Conv2D(nn.Block):
    def __init__(self, kernel_size, **kwargs):
        super().__init__(**kwargs)
        self.weight = self.params.get('weight', shape=kernel_size)
        self.bias = self.params.get('bias', shape=(1,))

    def forward(self, x):
        return corr2d(x, self.weight.data()) + self.bias.data()


def test_corr2d_and_edge_detection():
    X = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
    K = np.array([[0.0, 1.0], [2.0, 3.0]])
    assert onp.array_equal(corr2d(X, K).asnumpy(), [[19., 25.], [37., 43.]])

    X = np.ones((6, 8))
    X[:, 2:6] = 0
    K = np.array([[1.0, -1.0]])
    Y = corr2d(X, K)
    expected = onp.zeros((6, 7), onp.float32)
    expected[:, 1], expected[:, 5] = 1, -1
    assert onp.array_equal(Y.asnumpy(), expected)
    assert onp.array_equal(corr2d(X.T, K).asnumpy(), onp.zeros((8, 5)))

    layer = Conv2D(kernel_size=(1, 2))
    layer.initialize()
    assert layer(X).shape == (6, 7)


def test_learning_a_kernel():
    X = np.ones((6, 8))
    X[:, 2:6] = 0
    K = np.array([[1.0, -1.0]])
    Y = corr2d(X, K)

    # Construct a two-dimensional convolutional layer with 1 output channel and a kernel of
    # shape (1, 2). For the sake of simplicity, we ignore the bias here
    conv2d = nn.Conv2D(1, kernel_size=(1, 2), use_bias=False)
    conv2d.initialize()

    # The two-dimensional convolutional layer uses four-dimensional input and output in the
    # format of (example, channel, height, width), where the batch size (number of examples
    # in the batch) and the number of channels are both 1
    X = X.reshape(1, 1, 6, 8)
    Y = Y.reshape(1, 1, 6, 7)
    lr = 3e-2  # Learning rate

    for i in range(10):
        with autograd.record():
            Y_hat = conv2d(X)
            l = (Y_hat - Y) ** 2
        l.backward()
        # Update the kernel
        conv2d.weight.data()[:] -= lr * conv2d.weight.grad()
    assert float(l.sum()) < 0.1
    w = conv2d.weight.data().reshape((1, 2)).asnumpy()
    assert onp.allclose(w, [[1, -1]], atol=0.15)


# ---- 7.3 Padding and Stride --------------------------------------------------------------
def comp_conv2d(conv2d, X):
    conv2d.initialize()
    # (1, 1) indicates that batch size and the number of channels are both 1
    X = X.reshape((1, 1) + X.shape)
    Y = conv2d(X)
    # Exclude the first two dimensions that do not interest us: examples and channels
    return Y.reshape(Y.shape[2:])


def test_padding_and_stride():
    X = np.random.uniform(size=(8, 8))
    conv2d = nn.Conv2D(1, kernel_size=3, padding=1)
    assert comp_conv2d(conv2d, X).shape == (8, 8)
    conv2d = nn.Conv2D(1, kernel_size=(5, 3), padding=(2, 1))
    assert comp_conv2d(conv2d, X).shape == (8, 8)
    conv2d = nn.Conv2D(1, kernel_size=3, padding=1, strides=2)
    assert comp_conv2d(conv2d, X).shape == (4, 4)
    conv2d = nn.Conv2D(1, kernel_size=(3, 5), padding=(0, 1), strides=(3, 4))
    assert comp_conv2d(conv2d, X).shape == (2, 2)


# ---- 7.4 Multiple Input and Multiple Output Channels -------------------------------------
def corr2d_multi_in(X, K):
    # First, iterate through the 0th dimension (channel dimension) of `X` and `K`. Then, add
    # them together
    return sum(corr2d(x, k) for x, k in zip(X, K))


def corr2d_multi_in_out(X, K):
    # Iterate through the 0th dimension of `K`, and each time, perform cross-correlation
    # operations with input `X`. All of the results are stacked together
    return np.stack([corr2d_multi_in(X, k) for k in K], 0)


def corr2d_multi_in_out_1x1(X, K):
    c_i, h, w = X.shape
    c_o = K.shape[0]
    X = X.reshape((c_i, h * w))
    K = K.reshape((c_o, c_i))
    # Matrix multiplication in the fully connected layer
    Y = np.dot(K, X)
    return Y.reshape((c_o, h, w))


def test_multi_channel():
    X = np.array([[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]],
                  [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]])
    K = np.array([[[0.0, 1.0], [2.0, 3.0]], [[1.0, 2.0], [3.0, 4.0]]])
    assert onp.array_equal(corr2d_multi_in(X, K).asnumpy(), [[56., 72.], [104., 120.]])

    K = np.stack((K, K + 1, K + 2), 0)
    assert K.shape == (3, 2, 2, 2)
    out = corr2d_multi_in_out(X, K)
    assert onp.array_equal(out.asnumpy()[1], [[76., 100.], [148., 172.]])

    # the same through nn.Conv2D with the kernel copied in
    conv = nn.Conv2D(3, kernel_size=2, use_bias=False)
    conv.initialize()
    conv(X.reshape(1, 2, 3, 3))
    conv.weight.set_data(K)
    assert onp.allclose(conv(X.reshape(1, 2, 3, 3))[0].asnumpy(), out.asnumpy())

    X = np.random.normal(0, 1, (3, 3, 3))
    K = np.random.normal(0, 1, (2, 3, 1, 1))
    Y1 = corr2d_multi_in_out_1x1(X, K)
    Y2 = corr2d_multi_in_out(X, K)
    assert float(np.abs(Y1 - Y2).sum()) < 1e-5


# ---- 7.5 Pooling -------------------------------------------------------------------------
def pool2d(X, pool_size, mode='max'):
    p_h, p_w = pool_size
    Y = np.zeros((X.shape[0] - p_h + 1, X.shape[1] - p_w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            if mode == 'max':
                Y[i, j] = X[i: i + p_h, j: j + p_w].max()
            elif mode == 'avg':
                Y[i, j] = X[i: i + p_h, j: j + p_w].mean()
    return Y


def test_pooling():
    X = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
    assert onp.array_equal(pool2d(X, (2, 2)).asnumpy(), [[4., 5.], [7., 8.]])
    assert onp.array_equal(pool2d(X, (2, 2), 'avg').asnumpy(), [[2., 3.], [5., 6.]])

    X = np.arange(16, dtype=np.float32).reshape((1, 1, 4, 4))
    pool2d_layer = nn.MaxPool2D(3)
    assert onp.array_equal(pool2d_layer(X).asnumpy(), [[[[10.]]]])
    pool2d_layer = nn.MaxPool2D(3, padding=1, strides=2)
    assert onp.array_equal(pool2d_layer(X).asnumpy(), [[[[5., 7.], [13., 15.]]]])
    pool2d_layer = nn.MaxPool2D((2, 3), padding=(0, 1), strides=(2, 3))
    assert onp.array_equal(pool2d_layer(X).asnumpy(), [[[[5., 7.], [13., 15.]]]])

    X = np.concatenate((X, X + 1), 1)
    pool2d_layer = nn.MaxPool2D(3, padding=1, strides=2)
    out = pool2d_layer(X)
    assert out.shape == (1, 2, 2, 2)
    assert onp.array_equal(out.asnumpy()[0, 1], [[6., 8.], [14., 16.]])
