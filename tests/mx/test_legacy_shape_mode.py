"""MXNet 1.x's legacy shape mode (mx.util): off by default as in MXNet 1.9.1, per thread,
switched by set_np_shape / np_shape / use_np_shape / npx.set_np. In legacy mode a 0 in a
creation shape is an unknown size and () an unknown rank: nd.zeros/nd.ones refuse them
(MXNet raises MXNetError); with NumPy shape semantics they make zero-size and 0-d arrays."""
import threading

import pytest

import kiln
from kiln import nd
from kiln._core.base import KilnError
from kiln.mx import util


@pytest.fixture(autouse=True)
def legacy_mode():
    previous = util.set_np_shape(False)
    yield
    util.set_np_shape(previous)


def test_legacy_mode_refuses_unknown_creation_shapes():
    assert not util.is_np_shape()
    for shape in ((0, 1, 3, 0), (), (2, 0)):
        with pytest.raises(KilnError, match="legacy shape mode"):
            nd.zeros(shape)
        with pytest.raises(KilnError, match="legacy shape mode"):
            nd.ones(shape)
    assert nd.ones((2, 3)).shape == (2, 3)


def test_np_shape_scope_allows_zero_size_and_scalars_and_restores():
    with util.np_shape():
        assert nd.ones((0, 1, 0, 4)).shape == (0, 1, 0, 4)
        assert nd.zeros(()).shape == ()
        with util.np_shape(False):
            assert not util.is_np_shape()
        assert util.is_np_shape()
    assert not util.is_np_shape()
    assert util.set_np_shape(True) is False and util.set_np_shape(False) is True


def test_use_np_shape_scopes_functions_and_class_members():
    @util.use_np_shape
    def scalar_one():
        """one"""
        return nd.ones(())

    @util.use_np_shape
    class Scalars:
        def make(self):
            return nd.ones(())

        @staticmethod
        def static():
            return util.is_np_shape()

        @property
        def mode(self):
            return util.is_np_shape()

    assert scalar_one.__name__ == "scalar_one" and scalar_one.__doc__ == "one"
    assert scalar_one().shape == () and not util.is_np_shape()
    obj = Scalars()
    assert isinstance(obj, Scalars) and obj.make().shape == ()
    assert Scalars.static() and obj.mode and not util.is_np_shape()


def test_mode_is_per_thread_and_npx_set_np_switches_it():
    kiln.npx.set_np()
    assert util.is_np_shape()
    seen = []
    worker = threading.Thread(target=lambda: seen.append(util.is_np_shape()))
    worker.start()
    worker.join()
    assert seen == [False]
    kiln.npx.reset_np()
    assert not util.is_np_shape()


def test_legacy_mode_allocates_empty_and_full_of_zero_size():
    """MXNet 1.9.1 allocates nd.empty and nd.full without shape inference: a 0 is taken."""
    assert nd.empty((0,)).shape == (0,)
    assert nd.full((0, 2), 1).shape == (0, 2)
