"""Size guards of view decisions (_core/aliasing.py) wait for a write: whether a reshape of
a transposed array shares memory depends on its sizes (NumPy makes a view when a size is 1),
and that shows only through an in-place write. A program without one stays general in those
sizes; a program with one keeps the traced decision and serves only sizes where it holds."""
import numpy as onp

import kiln
from kiln import np, npx
from kiln.gluon import nn


class MergeHeads(nn.HybridBlock):
    """Multi-head attention's split and merge of heads: reshapes of transposed arrays."""

    def __init__(self, d=8, heads=2):
        super().__init__()
        self.d, self.heads = d, heads
        self.proj = nn.Dense(3 * d, flatten=False, in_units=d)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = np.split(self.proj(x), 3, axis=-1)

        def heads(t):
            return t.reshape(b, s, self.heads, self.d // self.heads).transpose(0, 2, 1, 3)

        q, k, v = heads(q), heads(k), heads(v)
        att = npx.softmax(np.matmul(q, k.transpose(0, 1, 3, 2)), axis=-1)
        return np.matmul(att, v).transpose(0, 2, 1, 3).reshape(b, s, self.d)


def _eager_and_hybrid(block_fn, sizes, **hybrid):
    onp.random.seed(0)
    net = block_fn()
    net.initialize(kiln.init.Uniform(0.5))
    inputs = [np.array(onp.random.uniform(-1, 1, shape).astype("float32")) for shape in sizes]
    expected = [net(x).asnumpy() for x in inputs]
    net.hybridize(**hybrid)
    for x, want in zip(inputs, expected):
        onp.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    return kiln.programs(net)


def test_merging_heads_serves_every_batch_and_length_with_one_program():
    # on the NumPy executor: generated C's batched matmul still needs its batch count
    sizes = [(2, 3, 8), (1, 1, 8), (3, 5, 8), (1, 4, 8), (4, 1, 8)]
    progs = _eager_and_hybrid(MergeHeads, sizes, backend="numpy",
                              dynamic_axes={"x": {0: "batch", 1: "seq"}})
    symbolic = [p for p in progs.programs if p.symbolic_dims]
    assert len(symbolic) == 1 and len(progs) == 1, str(progs)


def written_through_a_reshape(x):
    # x.T.reshape(-1) is a view when a size of x is 1 (NumPy), a copy otherwise: the write
    # reaches x only in the first case
    flat = x.T.reshape(-1)
    flat[0] = 100.0
    return x * 1.0


def test_a_write_through_a_size_dependent_view_keeps_eager_semantics():
    f = kiln.hybridize(written_through_a_reshape, backend="numpy",
                       dynamic_axes={0: {0: "rows"}})
    for rows in (3, 1, 4, 1):
        x = onp.arange(rows * 2, dtype="float32").reshape(rows, 2)
        expected = written_through_a_reshape(np.array(x)).asnumpy()
        onp.testing.assert_array_equal(f(np.array(x)).asnumpy(), expected)
    # the write makes the decision matter, so each program keeps its traced sizes (as a
    # reshape of a non-contiguous array always did): one program per distinct size
    progs = kiln.programs(f)
    assert len(progs) == 3, str(progs)
