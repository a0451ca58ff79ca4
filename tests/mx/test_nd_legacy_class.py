"""MXNet 1.x's NDArray class beside the numpy-class array, and contexts with device ids.
Expected values were read from real MXNet 1.9.1 (/work/mxref-venv) on this machine."""
import numpy as onp

import kiln
from kiln import np, nd
from kiln._core.base import KilnError
from kiln._core.context import cpu, cpu_pinned, Context


def test_nd_arrays_are_ndarray_and_np_arrays_are_instances_of_it():
    a, b = np.ones((2, 3)), nd.ones((2, 3))
    # MXNet 1.9.1: True True True (np.ndarray derives from NDArray there)
    assert isinstance(a, nd.NDArray) and issubclass(np.ndarray, nd.NDArray)
    assert type(b) is nd.NDArray and type(a) is np.ndarray
    for made in (b + 1, b[0], b * b, b.T, b.flatten(), nd.random.uniform(shape=(2,)),
                 nd.relu(b), b.reshape((3, 2)), b.copy(), b.astype("int32")):
        assert type(made) is nd.NDArray
    assert type(a + 1) is np.ndarray and type(nd.relu(a)) is np.ndarray   # np world unchanged


def test_as_np_and_as_nd_share_storage_and_gradient():
    b = nd.ones((2, 3))
    bb = b.as_np_ndarray()
    assert type(bb) is np.ndarray and type(bb.as_nd_ndarray()) is nd.NDArray
    bb[0, 0] = 5
    assert b[0, 0].asscalar() == 5          # MXNet 1.9.1: 5.0 (no copy)
    b.attach_grad()
    with kiln.autograd.record():
        y = (b.as_np_ndarray() * 2).sum()
    y.backward()
    assert type(b.grad) is nd.NDArray and (b.grad.asnumpy() == 2).all()


def test_1x_semantics_of_methods_and_operators():
    c = nd.array([7, 8], dtype="int32")
    # MXNet 1.9.1: c/2 -> [3 4] int32; c/2.5 -> [3 4] (2.5 taken as 2); c*1.5 -> [7 8];
    # -c/2 -> [-3 -4]; c / [2 3] -> [3 2]
    assert (c / 2).dtype == onp.int32 and (c / 2).asnumpy().tolist() == [3, 4]
    assert (c / 2.5).asnumpy().tolist() == [3, 4] and (c * 1.5).asnumpy().tolist() == [7, 8]
    assert (-c / 2).asnumpy().tolist() == [-3, -4]
    assert (c / nd.array([2, 3], dtype="int32")).asnumpy().tolist() == [3, 2]
    assert nd.ones((2, 3, 4)).flatten().shape == (2, 12)        # MXNet: (2, 12)
    assert nd.ones((1, 1, 1)).squeeze().shape == (1,)            # MXNet: (1,)
    assert nd.ones((2, 3))[0, 0].shape == (1,)
    assert repr(nd.ones((2, 3))).endswith("<NDArray 2x3 @cpu(0)>")


def test_squeeze_expand_dims_flatten_copy_unless_inplace():
    for method, args in (("squeeze", (0,)), ("expand_dims", (1,)), ("flatten", ())):
        data = nd.ones((1, 3, 2))
        copy = getattr(data, method)(*args)
        view = getattr(data, method)(*args, inplace=True)
        data[0] = -1
        assert (copy.asnumpy() == 1).all() and (view.asnumpy() == -1).all()


def test_fluent_methods_are_the_nd_functions():
    x = nd.random.uniform(shape=(5, 17, 1))
    for name in ("flatten", "softmax", "sign", "round"):
        onp.testing.assert_allclose(getattr(x, name)().asnumpy(),
                                    getattr(nd, name)(x).asnumpy())


def test_arrays_report_the_context_they_were_given():
    # MXNet 1.9.1: zeros(ctx=cpu(1)).context == cpu(1); as_in_context(cpu(0)) -> cpu(0);
    # as_in_context(its own context) is the same object; copyto(cpu_pinned(0)) -> cpu_pinned(0)
    z = nd.zeros((2,), ctx=cpu(1))
    assert z.context == cpu(1) and z.as_in_context(cpu(1)) is z
    moved = z.as_in_context(cpu(0))
    assert moved.context == cpu(0) and moved is not z
    assert z.copyto(cpu_pinned(0)).context == cpu_pinned(0)
    shared = Context("cpu_shared", 0)
    assert nd.zeros((1, 2, 3), ctx=shared).context == shared
    assert np.zeros(2, ctx=cpu(2)).context == cpu(2) and np.ones(2).context == cpu(0)
    assert (nd.array([1, 2], ctx=cpu(3)).as_in_context(cpu(0)).asnumpy() == [1, 2]).all()


def test_partial_writes_refused_while_recording_whole_ones_copied():
    # MXNet 1.9.1: x[0] = y under record raises "Inplace operations ... not supported when
    # recording with autograd"; x[:] = 2 and x[...] = z do not
    x, y = nd.ones((2, 3)), nd.ones((3,))
    y.attach_grad()
    with kiln.autograd.record():
        x[:] = 2
        x[...] = nd.zeros((2, 3))
        try:
            x[0] = y
            raised = False
        except KilnError as err:        # MXNet's MXNetError is kiln's KilnError
            raised = "Inplace operations" in str(err)
    assert raised and (x.asnumpy() == 0).all()


def test_from_numpy_shares_memory_and_locks_the_source():
    src = onp.array([[1, 2], [3, 4], [5, 6]], dtype="float32")
    nd.from_numpy(src)
    arr = nd.from_numpy(src)            # twice: MXNet shares the memory again
    assert not src.flags.writeable
    arr[2, 1] = 100
    assert src[2, 1] == 100
    assert (nd.from_numpy(src, zero_copy=False).asnumpy() == src).all()
    try:
        nd.from_numpy(onp.ones((2, 3)).T)
        refused = False
    except ValueError:
        refused = True
    assert refused


def test_round_keeps_large_integers_exact():
    a = nd.array([50000001], dtype="int32")   # MXNet 1.9.1: round() == 50000001, int32
    assert a.round().dtype == onp.int32 and a.round().asnumpy()[0] == 50000001


def test_one_element_list_fills_a_scalar_slot():
    x = nd.zeros((2, 3), dtype="int32")
    x[1, 2] = [-7]                      # MXNet 1.9.1 accepts it
    assert x.asnumpy()[1, 2] == -7
