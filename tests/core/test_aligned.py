"""Memory that compiled code streams starts on a 64-byte boundary (kiln/_core/aligned.py)."""
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings, strategies as st

from kiln._core import aligned, autograd
from kiln import gluon, np
from kiln.backend.c import build
from kiln.gluon import nn


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(0, 7), min_size=0, max_size=3),
       dtype=st.sampled_from(["float32", "float64", "int8", "int64", "float16", "bool"]))
def test_empty_and_copies_are_aligned_and_hold_the_values(shape, dtype):
    out = aligned.empty(shape, dtype)
    assert out.shape == tuple(shape) and out.dtype == onp.dtype(dtype)
    assert out.flags.c_contiguous and out.flags.writeable
    assert aligned.is_aligned(out)
    assert not aligned.zeros(shape, dtype).any()
    value = onp.arange(int(onp.prod(shape)), dtype="float64").reshape(shape) - 3.5
    copy = aligned.copy_of(value, dtype)
    assert aligned.is_aligned(copy)
    onp.testing.assert_array_equal(copy, onp.array(value, dtype=dtype))
    copy[...] = 0                      # a copy: the source is untouched
    assert onp.array_equal(value, onp.arange(value.size).reshape(shape) - 3.5)


def test_what_numpy_refuses_or_cannot_align_behaves_as_in_numpy():
    with pytest.raises(ValueError):
        aligned.empty((-3,), "float64")
    assert aligned.empty((2,), object).tolist() == [None, None]
    assert aligned.copy_of(["a", 1], object).tolist() == ["a", 1]
    assert aligned.empty((2,), "S0").shape == (2,)


def test_many_allocations_are_all_aligned():
    # NumPy's own alignment is 16: among 50 arrays of odd sizes some would start off a line
    arrays = [aligned.empty((n, 3), "float32") for n in range(1, 51)]
    assert all(aligned.is_aligned(a) for a in arrays)


def trained_net():
    net = nn.HybridSequential()
    net.add(nn.Dense(33, activation="relu"), nn.Dense(5))
    net.initialize()
    x = np.array(onp.random.default_rng(0).standard_normal((4, 7)).astype("float32"))
    net(x)
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    trainer.step(4)
    return net, trainer, x


def test_parameters_gradients_and_optimizer_state_are_aligned(tmp_path):
    net, trainer, _ = trained_net()
    params = list(net.collect_params().values())
    for p in params:
        assert aligned.is_aligned(p.data()._data), p.name
        assert aligned.is_aligned(p.grad()._data), p.name
    states = [s for state in trainer._states.values()
              for s in trainer._optimizer.state_arrays(state)]
    assert len(states) == 2 * len(params)          # adam: two per parameter
    assert all(aligned.is_aligned(s) for s in states)
    path = str(tmp_path / "t.states")
    trainer.save_states(path)
    trainer._states.clear()
    trainer.load_states(path)
    assert all(aligned.is_aligned(s) for state in trainer._states.values()
               for s in trainer._optimizer.state_arrays(state))
    # set_data, load_parameters and cast put new arrays in: aligned too
    params[0].set_data(np.ones(params[0].shape))
    path = str(tmp_path / "p.params")
    net.save_parameters(path)
    net.load_parameters(path)
    net.cast("float64")
    assert all(aligned.is_aligned(p.data()._data) for p in params)


@pytest.mark.skipif(not build.available(), reason="no C compiler")
def test_compiled_programs_buffers_and_input_copies_are_aligned():
    net, _, x = trained_net()
    net.hybridize(backend="c")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net(x)
    program = next(iter(net._kiln_cached.entries.values())).program
    assert program.buffers and all(aligned.is_aligned(b) for b in program.buffers)
    fixed = [f[0] for _, _, _, f in program.input_specs if f is not None]
    assert fixed and all(aligned.is_aligned(f) for f in fixed)
