"""Regressions from differential fuzzing (issue 16): hybridized code computes what eager
code computes, on both backends, forward, arguments afterwards, and backward.

Each case runs through kiln.fuzz.compare, which checks the tracing call, a second call, a
call with new values, the caller's arguments after the call and the gradients, and that
both sides raise the same error class when one raises.
"""
import warnings

import numpy as onp
import pytest

import kiln
from kiln import np, npx
from kiln.fuzz.compare import compare

R = onp.random.default_rng(16)


def arr(*shape, dtype="float32"):
    return np.array(R.uniform(-2, 2, shape).astype(dtype))


def assert_equal_everywhere(fn, *args, new=None, grad=True):
    new = new if new is not None else [arr(*a.shape, dtype=a.dtype) if isinstance(
        a, kiln.np.ndarray) else a for a in args]
    findings = compare(fn, list(args), list(new), grad=grad, strict=True)
    assert not findings, "\n".join(map(repr, findings))


# ---- 1. matmul epilogue of another dtype (was: heap corruption on the C backend) ---------

def test_matmul_then_wider_cast():
    def f(a, w):
        return np.dot(a, w).astype("float64")
    assert_equal_everywhere(f, arr(1, 3), arr(3, 6))


@pytest.mark.parametrize("operand", ["a.T.astype('int32')", "a.astype('int32')"])
def test_no_gradient_through_an_integer_matmul_operand(operand):
    """Fuzz seed 56 #277: eagerly, a transposed integer operand took the weight-gradient
    shortcut of a transposed matrix and got a float gradient through the cast to int, which
    the generic path (and compiled code) gives none."""
    def f(a):
        return a @ eval(operand)
    assert_equal_everywhere(f, arr(3, 3))


@pytest.mark.parametrize("op", ["matmul", "dot", "inner", "batch_dot"])
def test_matmul_family_then_comparison(op):
    def f(a, w):
        if op == "inner":
            return np.inner(a, w) >= -0.5
        if op == "batch_dot":
            return npx.batch_dot(a, w) >= -0.5
        return getattr(np, op)(a, w) >= -0.5
    shapes = {"inner": ((126, 5), (3, 5)), "batch_dot": ((2, 63, 5), (2, 5, 3))}
    sa, sw = shapes.get(op, ((126, 5), (5, 3)))
    assert_equal_everywhere(f, arr(*sa), arr(*sw), grad=False)


# ---- 2. in-place update of an array made by ones_like / zeros_like / full ----------------

@pytest.mark.parametrize("make", ["ones_like", "zeros_like", "full"])
def test_inplace_on_created_array(make):
    def f(x):
        v = np.full(x.shape, 2.0) if make == "full" else getattr(np, make)(x)
        v = v * -1.0
        v += x
        return v
    assert_equal_everywhere(f, arr(3))


def test_constant_written_after_it_was_read():
    def f(x):
        c = np.ones(3)
        y = x + c
        c += 1           # eager write into an array the trace already read
        return y * c
    assert_equal_everywhere(f, arr(3))


# ---- 3. copies do not alias ---------------------------------------------------------------

@pytest.mark.parametrize("how", ["np.copy", "method"])
def test_copy_is_a_copy(how):
    def f(a):
        t = a * 2
        v = np.copy(t) if how == "np.copy" else t.copy()
        t += t
        return v, t
    assert_equal_everywhere(f, arr(2))


# ---- 4. writes through views --------------------------------------------------------------

def test_write_through_transpose():
    def f(a):
        t = a.T
        t *= -2.5
        return np.mean(a, 0)
    assert_equal_everywhere(f, arr(3, 2))


def test_write_to_base_seen_by_reshape_view():
    def f(a):
        y = np.stack([a, a * 2])
        z = y.reshape(-1)
        y[...] = -1
        return z
    assert_equal_everywhere(f, arr(2))


@pytest.mark.parametrize("view", ["slice", "expand_dims", "split", "squeeze", "swapaxes",
                                  "view_of_view"])
def test_write_through_other_views(view):
    def f(a):
        b = a * 1
        if view == "slice":
            v = b[1:, ::2]
        elif view == "expand_dims":
            v = np.expand_dims(b, 0)
        elif view == "split":
            v = np.split(b, 2, axis=1)[1]
        elif view == "squeeze":
            v = np.squeeze(b[:1])
        elif view == "swapaxes":
            v = np.swapaxes(b, 0, 1)
        else:
            v = b.T[1:][:, ::2]
        v += 10
        v[...] = v * 3
        return b, v
    assert_equal_everywhere(f, arr(3, 4))


def test_reshape_of_transposed_is_a_copy():
    def f(a):
        r = a.T.reshape(-1)      # NumPy copies here: a write to a is not seen by r
        a2 = a * 1
        r2 = a2.T.reshape(-1)
        a2 += 1
        return r, r2, a2
    assert_equal_everywhere(f, arr(2, 3))


def test_broadcast_view_sees_writes_and_detaches_on_write():
    def f(a):
        b = a * 1
        v = np.broadcast_to(b, (2, 3))
        b += 1
        w = v * 1
        v += 5           # eager copies the read-only view first
        return b, v, w
    assert_equal_everywhere(f, arr(3))


# ---- 5. in-place updates of arguments ----------------------------------------------------

def test_argument_updated_in_place():
    def f(a):
        a *= a
        return a
    assert_equal_everywhere(f, arr(3))


def test_argument_gradients_not_swapped():
    def f(a0, a1):
        a0 /= 2
        return a1 * 3
    assert_equal_everywhere(f, arr(3), arr(2, 1))


def test_argument_written_through_a_view():
    def f(a, b):
        a[0] = b.sum()
        a.T[1:] *= 2
        return a.sum() + b
    assert_equal_everywhere(f, arr(3, 2), arr(2))


def test_argument_update_visible_to_caller_views():
    a = np.array([1.0, 2.0, 3.0])
    head = a[:2]             # the caller's own view: eager writes show through it
    f = kiln.hybridize(lambda x: x.__imul__(2), backend="numpy")
    f(a)
    onp.testing.assert_array_equal(a.asnumpy(), [2, 4, 6])
    onp.testing.assert_array_equal(head.asnumpy(), [2, 4])


# ---- 6. NaN and Inf propagate as in eager (no reassociation in the C build) ---------------

def test_std_of_one_element_has_nan_gradient():
    assert_equal_everywhere(lambda a: np.std(a) + a.sum(), arr(1))


def test_sqrt_of_zero_sum_has_nan_gradient():
    assert_equal_everywhere(lambda a: np.sqrt(np.sum(a - a)) + a.sum(), arr(2))


def test_inf_minus_inf_is_nan_forward():
    def f(a):
        big = np.exp(a * 0 + 100.0)          # inf in float32
        return (a + big) - big, a * big * 0
    assert_equal_everywhere(f, arr(4), grad=False)


def test_fast_math_is_opt_in(monkeypatch):
    from kiln.backend.c import build
    monkeypatch.delenv("KILN_FAST_MATH", raising=False)
    assert "-fassociative-math" not in build.FLAGS + build._opt_in_flags()
    monkeypatch.setenv("KILN_FAST_MATH", "1")
    assert "-fassociative-math" in build._opt_in_flags()


# ---- integer-array assignment, and exceptions parity --------------------------------------

def test_integer_array_assignment():
    def f(x, v):
        x = x * 1
        x[[0, 2, 0], 1:] = v       # repeated index: the last write wins, as in NumPy
        x[1, [1, -1]] = 7
        return x
    assert_equal_everywhere(f, arr(3, 4), arr(3, 3))


def test_integer_array_assignment_with_traced_index_falls_back():
    def f(x, i):
        y = x * 1
        y[i] = 0.0
        return y
    x, i = arr(4), np.array([1, 3], dtype="int64")
    g = kiln.hybridize(f, backend="numpy")
    with pytest.warns(kiln.hybrid.fallback.HybridizeFallbackWarning):
        out = g(x, i)
    onp.testing.assert_array_equal(out.asnumpy(), f(x, i).asnumpy())


@pytest.mark.parametrize("body", ["cast", "ones_like", "detach"])
def test_backward_without_a_path_raises_in_both(body):
    def f(a, b):
        if body == "cast":
            return (a > 0).astype("float32") * 2, b * 1
        if body == "ones_like":
            return np.ones_like(a), b * 1
        return a.detach() * 2, b * 1
    assert_equal_everywhere(f, arr(3), arr(2))         # b joins: backward runs
    assert_equal_everywhere(lambda a: f(a, a)[0], arr(3))   # nothing joins: both raise


def test_error_classes_agree():
    def f(a):
        return a.reshape(5, 7)
    findings = compare(f, [arr(6)], strict=True)
    assert not findings, findings


# ---- found by kiln's own fuzzer (python -m kiln fuzz) --------------------------------------

def test_inplace_in_branch_updates_the_object_and_its_views():
    def f(a0):
        v2 = np.zeros((3,))
        v4 = v2.flatten()          # the same object as v2 (NumPy would give a view)
        w = v2[1:]
        if a0.sum() > 0:
            v4 += 1
        else:
            v4 -= 2
        return v4, v2 * 1, w * 1
    assert_equal_everywhere(f, np.array([1.0, 2, 3]), new=[np.array([-1.0, 2, -3])])


def test_inplace_in_loop_body_updates_views():
    def f(a0):
        t = a0 * 1
        u = t[:2]
        n = np.zeros(())
        while (np.abs(t).sum() > 1) * (n < 5):
            t /= 2
            n = n + 1
        return t, u * 1
    assert_equal_everywhere(f, np.array([1.0, 2, 3]), new=[np.array([-1.0, 2, -3])])


def test_unused_output_does_not_leak_nan_into_gradients():
    def f(a0, a1):             # fuzz seed 1 #12: a0 /= 0 and a0 is not in the loss
        v1 = np.sqrt(a0)
        v5 = np.square(v1)
        a0 /= v1 * a1
        return v5
    assert_equal_everywhere(f, np.array([[2.0, 0.5, 0.0]]),
                            np.array([0.0, 1.5, 1.75], dtype="float64"))


def test_inplace_dtype_error_raised_when_traced():
    def f(a):
        b = a > 0
        b += 1                    # int64 result cannot be stored into bool: eager raises
        return b
    assert_equal_everywhere(f, arr(3))


@pytest.mark.parametrize("only_counter", [True, False])
def test_loop_counter_has_no_gradient_path(only_counter):
    def f(a):
        t = a * 1
        n = np.zeros(())
        while (np.abs(t).sum() > 1) * (n < 5):
            t = t / 2
            n = n + 1
        if only_counter:
            return n * 1          # backward raises in both: nothing joins n to a
        return n * 1, t
    assert_equal_everywhere(f, arr(3))


def test_written_scalar_argument_gets_scalar_gradient():
    def f(a0, a1):            # fuzz seed 2 #22: a folded 0-d constant came out as shape (1,)
        a1 -= a1
        return a0 + a0
    assert_equal_everywhere(f, arr(4), np.array(1.5))


def test_boolean_mask_of_traced_mask_falls_back():
    def f(a):
        return a[a > 0] * 2
    x = np.array([1.0, -2.0, 3.0])
    with pytest.warns(kiln.hybrid.fallback.HybridizeFallbackWarning):
        out = kiln.hybridize(f, backend="numpy")(x)
    onp.testing.assert_array_equal(out.asnumpy(), [2.0, 6.0])


def test_loop_that_runs_no_time_then_argument_update():
    def f(a0):                 # fuzz seed 3 #14: the loop memo held the argument itself
        v1 = a0 * 1
        n = np.zeros(())
        while (np.abs(v1).sum() > 1) * (n < 5):
            v1 = v1 / 2
            n = n + 1
        v3 = npx.sigmoid(v1)
        a0 /= v3
        return v3
    assert_equal_everywhere(f, np.array(-0.5))


def test_eager_write_after_use_does_not_change_gradient():
    def f(a0, a2):             # fuzz seed 3 #16: eager backward read the written buffer
        v2 = np.minimum(a2, a0)
        a2[-1] = 2
        return v2
    mask = np.array(R.integers(0, 2, (2, 3, 4)).astype(bool))
    assert_equal_everywhere(f, np.array(0.75), mask)


def test_any_all_of_empty_and_max_of_empty():
    def f(a):
        e = a[0, 1:]
        return np.any(e > 0), np.all(e > 0)
    assert_equal_everywhere(f, arr(2, 1))
    assert not compare(lambda a: a[0, 1:].max(), [arr(2, 1)], strict=True)  # both raise


def test_integer_index_gives_a_copy():
    def f(a0):                 # fuzz seed 3 #77: a[-1] of a 1-D array is a scalar copy
        v2 = a0[-1]
        v4 = v2.reshape(-1)
        a0 *= a0
        return v4, a0[..., -1]
    assert_equal_everywhere(f, arr(3))


def test_assignment_drops_leading_length_one_dims():
    def f(a, b):
        y = a * 1
        y[0] = b[None]             # NumPy: a (1, 3) value fits a (3,) slot
        y[[1]] = b[None, None]
        return y
    assert_equal_everywhere(f, arr(2, 3), arr(3))


def test_narrowing_type_rule_on_numpy_executor():
    def f(a):
        return np.maximum(a > 0, 1), np.minimum(a > 0, True)
    assert_equal_everywhere(f, arr(4))


def test_view_of_broadcast_view_is_read_only():
    def f(a0):                 # fuzz seed 3 #84, #155, #207
        v2 = np.broadcast_to(a0, (2,) + a0.shape)
        v4 = v2[::2]
        v4 += 1                    # eager copies v4 first: v2 and a0 keep their values
        v7 = v2.T[1:]
        v7 -= v7
        return v4, v2 * 1, v7, a0
    assert_equal_everywhere(f, arr(2, 3))


def test_reduction_axis_of_0d_raises_in_both():
    findings = compare(lambda a: np.sum(a.sum(), axis=0, keepdims=True), [arr(3)],
                       strict=True)
    assert not findings, findings


def test_overlapping_assignment_reads_the_value_first():
    def f(a0):                 # fuzz seed 11 #46: NumPy alone would read overwritten items
        v1 = a0.reshape(-1)
        v4 = np.split(v1, 2)[0]
        v1[::2] = v4
        return v4, a0
    assert_equal_everywhere(f, arr(3, 4))
    x = np.array(onp.arange(12.0))
    x[::2] = x[:6]
    onp.testing.assert_array_equal(x.asnumpy()[::2], onp.arange(6.0))


def test_bool_relu_on_numpy_executor():
    def f(a1):                 # fuzz seed 11 #52
        v4 = npx.relu(np.logical_xor(a1, a1))
        return v4.astype("float64"), np.logical_not(v4)
    assert_equal_everywhere(f, np.array([True, False, True]))


def test_unsupported_dtype_loop_raises_when_traced():
    def f(a0):                 # fuzz seed 11 #98: bool - bool is a TypeError in NumPy
        v1 = a0 <= 2
        v3 = v1.T
        v3 -= v3
        return v1
    assert_equal_everywhere(f, arr(2, 2))
    assert not compare(lambda a: -(a > 0), [arr(3)], strict=True)


def test_integer_floor_divide_by_zero_is_zero():
    a = np.array([0, 3, -7], dtype="int64")
    b = np.array([0, 2, 2], dtype="int64")
    onp.testing.assert_array_equal((a // b).asnumpy(), [0, 1, -4])   # NumPy's answer
    assert_equal_everywhere(lambda a, b: (a // b, np.argmin(a) // np.argmin(a)), a, b)


def test_detached_array_shares_memory_when_traced():
    def f(a1, a2):             # fuzz seed 44 #215: npx.stop_gradient is x.detach()
        v2 = npx.stop_gradient(a2)
        v3 = np.expand_dims(a2, 0)
        v3 += 1
        return v2 * a1, a2
    assert_equal_everywhere(f, arr(3), arr(3))


def test_export_refuses_a_forward_that_writes_its_input(tmp_path):
    from kiln.gluon import nn

    class Scale(nn.HybridBlock):
        def forward(self, x):
            x *= 2
            return x + 1
    net = Scale()
    net.hybridize()
    net(arr(3))
    with pytest.raises(kiln.base.KilnError, match="in place"):
        net.export(str(tmp_path / "scale"))


def test_bool_input_to_float_activation_on_numpy_executor():
    def f(a):                  # fuzz seed 0 #366: the executor's sigmoid negated a bool
        v1 = np.repeat(a, 2, axis=0)
        return npx.silu(v1), npx.sigmoid(a), np.exp(a)
    assert_equal_everywhere(f, np.array([True, False, True]))


# ---- found by the fuzzer on the merged main (seed 424242, #1606) -------------------------

def test_nan_to_integer_and_back_converts_as_eager_does():
    """GCC under -fno-trapping-math rewrote (float)(int64_t)x as truncf(x), across unrolled
    loops too: NaN stayed NaN in C where NumPy's conversion gives INT64_MIN."""
    def f(a0):
        v1 = a0 ** a0
        v2 = v1.astype("int64")
        v3 = np.squeeze(v1)
        v1[::2] = v2
        return v3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # NumPy: invalid value in cast
        assert_equal_everywhere(f, np.array([[2.0, -1.75, -0.25]], dtype="float32"),
                                new=[np.array([[0.75, -0.5, 0.0]], dtype="float32")],
                                grad=False)
        assert_equal_everywhere(lambda a: (a ** a).astype("int32").astype("float64"),
                                np.array([2.0, -1.75, -0.25, 3.0], dtype="float32"),
                                grad=False)


def test_zero_remainder_takes_the_divisors_sign():
    """np.remainder(-1.5, 1.5) is +0.0 (NumPy), so its reciprocal is +inf; C gave -0.0."""
    def f(a0):
        return np.reciprocal(np.remainder(a0, 1.5)).astype("float64")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # divide by zero
        for dtype in ("float64", "float32"):
            a = np.array([[1.5, 0.75, -1.5, 0.75], [-2.0, 1.25, 1.75, 2.0],
                          [-3.0, 3.0, 0.0, -0.0]], dtype=dtype)
            assert_equal_everywhere(f, a, new=[-a], grad=False)
            assert_equal_everywhere(lambda x: 1 / np.remainder(x, -1.5), a, grad=False)
