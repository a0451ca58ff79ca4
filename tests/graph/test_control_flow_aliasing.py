"""After an `if` or `while` on an array, a name may be the array it was before on one path
and a new array on another (_core/alias_paths.py). An in-place write then changes the
caller's array on one path only: hybridize compiles such code (strict mode too) and must
give eager's results on every path, through other names and views included."""
import warnings

import numpy as onp
import pytest

import kiln
from kiln import np
from kiln.fuzz.compare import compare
from kiln.hybrid.fallback import HybridizeFallbackWarning

pytestmark = pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")


def rebound_then_written(x):
    if np.abs(x).max() < 1.5:
        x = -x
    x += 1
    return x * 1


def view_rebound_then_written(a):
    v = a[1:]
    if np.abs(v).max() < 1.5:
        v = -v
    v += 1
    return a * 1


def reshape_of_a_transposed_view_written(a):      # fuzz seed 54, program 868
    v = np.swapaxes(a, 0, 1)
    if np.abs(v).max() < 1.5:
        v = -v
    flat = v.reshape(-1)        # a copy of the transposed view, a view of the new array
    flat -= flat
    return np.var(v, axis=0)


def loop_rebound_then_written(x):
    while x.sum() < 10:
        x = x * 2
    x += 1
    return x * 1


def original_written_after(x):
    y = x
    if np.abs(x).max() < 1.5:
        x = -x
    y += 1
    return x * 1


CASES = [rebound_then_written, view_rebound_then_written,
         reshape_of_a_transposed_view_written, loop_rebound_then_written,
         original_written_after]


@pytest.mark.parametrize("backend", ["numpy", "c"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_every_path_gives_eager_results(fn, backend):
    for scale in (1.0, 0.1, 10.0):      # the test true and false, the loop run or not
        start = (onp.arange(6, dtype="float32").reshape(2, 3) - 2) * scale
        eager_arg, compiled_arg = np.array(start), np.array(start)
        want = fn(eager_arg).asnumpy()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = kiln.hybridize(fn, backend=backend)(compiled_arg).asnumpy()
        onp.testing.assert_array_equal(got, want)
        onp.testing.assert_array_equal(compiled_arg.asnumpy(), eager_arg.asnumpy())
        fallbacks = [str(w.message) for w in caught
                     if issubclass(w.category, HybridizeFallbackWarning)]
        assert not fallbacks, fallbacks


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_no_write_afterwards_still_compiles(backend):
    def f(x):
        if np.abs(x).max() < 1.5:
            x = -x
        y = x + 1
        y += 1          # a new array of its own: no path-dependent aliasing
        return y
    for scale in (1.0, 0.1):
        start = onp.arange(6, dtype="float32") * scale
        with warnings.catch_warnings():
            warnings.simplefilter("error", HybridizeFallbackWarning)
            got = kiln.hybridize(f, backend=backend)(np.array(start)).asnumpy()
        onp.testing.assert_array_equal(got, f(np.array(start)).asnumpy())


# ---- refused by hybridize(strict=True) before (differential fuzzing, issue 24) -----------
# A loop that rebinds a variable every iteration leaves it on the array it had only when
# it runs no time; an in-place write follows.

def fuzz_loop_result_updated(a0):                       # seed 0, #5
    v2 = a0 * 1
    v3 = np.zeros(())
    while (np.abs(v2).sum() > 1) * (v3 < 5):
        v2 = v2 / 2
        v3 = v3 + 1
    v2 -= 2
    return v2, v3


def fuzz_counter_updated_in_an_if(a0):                   # seed 0, #7
    v4 = a0 * 1
    v5 = np.zeros(())
    while (np.abs(v4).sum() > 1) * (v5 < 5):
        v4 = v4 / 2
        v5 = v5 + 1
    if np.abs(v5).max() < 1.5:
        v5 += 1
    return v4, v5


def fuzz_transposed_view_of_the_result_written(a0):      # seed 0, #21
    v1 = a0 * 1
    v2 = np.zeros(())
    while (np.abs(v1).sum() > 1) * (v2 < 5):
        v1 = v1 / 2
        v2 = v2 + 1
    v5 = v1.T
    v5 *= -2
    return v1, v5


def fuzz_element_assigned(a0):                           # seed 0, #99
    v4 = a0 * 1
    v5 = np.zeros(())
    while (np.abs(v4).sum() > 1) * (v5 < 5):
        v4 = v4 / 2
        v5 = v5 + 1
    v4[0] = 4
    return v4


def fuzz_copy_of_a_view_of_the_argument(a0):             # seed 0, #122
    v1 = np.split(a0.reshape(-1), 2)[0]
    v7 = v1[..., :1] * 1
    v8 = np.zeros(())
    while (np.abs(v7).sum() > 1) * (v8 < 5):
        v7 = v7 / 2
        v8 = v8 + 1
    v7[::2] = 4
    return v7, a0


def fuzz_reshape_divided_in_place(a0):                   # seed 0, #240
    v1 = a0.astype('int64')
    v2 = a0 * 1
    v3 = np.zeros(())
    while (np.abs(v2).sum() > 1) * (v3 < 5):
        v2 = v2 / 2
        v3 = v3 + 1
    v8 = v2.reshape(-1)
    v8 /= v1.reshape(-1) + 3
    return v2


def fuzz_swapped_view_zeroed(a0):                        # seed 0, #415
    v2 = a0 * 1
    v3 = np.zeros(())
    while (np.abs(v2).sum() > 1) * (v3 < 5):
        v2 = v2 / 2
        v3 = v3 + 1
    v5 = np.swapaxes(v2, 0, 1)
    v5 -= v5
    return v2


def fuzz_counter_decremented(a0):                        # seed 0, #254
    v2 = a0.reshape(-1) * 1
    v3 = np.zeros(())
    while (np.abs(v2).sum() > 1) * (v3 < 5):
        v2 = v2 / 2
        v3 = v3 + 1
    v3 -= 4
    return v2, v3


# ---- the caller's array, other names for it and views of it -----------------------------

def view_rebound_then_base_and_view_written(a0):
    v = a0[1:]
    if v.sum() > 0:
        v = -v
    a0 += 1
    v += 1
    return v, a0


def second_name_written_after_write_or_rebind(a0):
    w = a0
    if a0.sum() > 0:
        a0 = a0 * 2
    else:
        a0 += 1                 # the caller's array, on this path only
    w *= -2
    a0[...] = a0 + 0.5
    return w, a0


def nested_if_then_write_in_the_branch(a0):
    w = a0
    if a0.sum() > 0:
        if a0.max() > 1:
            a0 = -a0
        a0 += 1                 # the caller's array unless the inner test held
    w -= 0.25
    return w * 1, a0


def loop_writes_then_rebinds(a0):
    w = a0.T
    n = np.zeros(())
    while (np.abs(a0).sum() > 1) * (n < 3):
        a0 -= 0.25              # the caller's array on the first iteration only
        a0 = a0 * 0.5
        n = n + 1
    a0 += 1
    return w * 1, a0, n


def loop_rebinds_on_some_iterations(a0):
    w = a0[::2]
    n = np.zeros(())
    while (np.abs(a0).sum() > 1) * (n < 3):
        if a0.sum() > 0:
            a0 = a0 / 2
        else:
            a0 -= 0.5
        n = n + 1
    w += 1
    return a0 * 1, w


def reshape_of_a_result_whose_layout_depends_on_the_path(a0):
    v = a0.T
    if v.sum() > 0:
        v = np.dot(v, np.ones((v.shape[1], v.shape[1]), dtype="float32"))
    flat = v.reshape(-1)        # a view of the new (C-ordered) array, a copy of a0.T
    flat += 1
    return v * 1, flat, a0


def loop_changes_the_layout(a0):
    v = a0.T
    n = np.zeros(())
    while (np.abs(v).sum() > 1) * (n < 3):
        v = np.dot(v, np.ones((v.shape[1], v.shape[1]), dtype="float32")) * 0.25
        n = n + 1
    flat = v.reshape(-1)
    flat *= 2
    return v * 1, flat


def two_ifs_then_write(a0):
    w = a0
    if a0.sum() > 0:
        a0 = -a0
    if a0.max() > 0.5:
        a0 = a0 * 2
    a0 += 1
    return w * 1, a0 * 1


def for_loop_with_an_array_bound(a0):
    w = a0
    for _ in range((np.abs(a0).sum() > 2).astype("int64") * 2):
        a0 = a0 * 0.5
    a0 -= 1
    return w * 1, a0


def original_written_then_read_through_the_result(a0):
    v = a0
    if a0.sum() > 0:
        v = v + 0
    a0[0] = 5.0
    return v * 1


def view_of_the_original_written_after_a_loop(a0):
    v = a0[0]
    n = np.zeros(())
    while (np.abs(a0).sum() > 1) * (n < 2):
        a0 = a0 / 2
        n = n + 1
    v += 3
    return a0 * 1


def rebound_in_a_loop_body_if_then_written(a0):
    n = np.zeros(())
    w = a0
    while n < 2:
        if a0.sum() > 0:
            a0 = a0 - 1
        a0 += 0.5
        n = n + 1
    return w * 1, a0 * 1


def fuzz_view_kept_by_a_link_only(a0, a1, a2):          # fuzz seed 101, #103
    v1 = a1[::2]
    if (a0 > 0).any():
        if np.abs(a2).max() < 1.5:
            v1 = -v1
        v1 *= -2
    v4 = np.copy(v1)
    v5 = v1
    if v4.sum() > 0:
        v1 = np.abs(v1)
    v5 -= 0.25                  # through the view no name holds any more
    return a1


def fuzz_loop_leaves_a_strided_view_or_a_new_array(a0):     # fuzz seed 731559, #127
    v1 = a0[:, 1:]
    v2 = np.zeros(())
    while (np.abs(v1).sum() > 1) * (v2 < 3):
        v1 = v1 / 2             # C-ordered, where the view entering the loop is strided
        v2 = v2 + 1
    v3 = v1.reshape((1, 1) + v1.shape)     # a view on both paths
    v3 *= 2
    a0 /= -2.0
    return np.sin(v1), v3


def fuzz_constant_written_after_an_if(a0, a1):            # fuzz seed 731559, #904
    v4 = np.arange(4) * 0.5     # no argument reaches it: an eager array while tracing
    v5 = v4.T
    if a1.sum() > 0:
        v5 = np.abs(v5)
    v4 += 1                     # reaches v5 where the test was false
    if np.abs(a0).max() < 1.5:
        v5 -= 0.25
    v4[1:] = v4[1:] * 2
    return v4 * 1, v5 * 1


COMPILED = [fuzz_loop_leaves_a_strided_view_or_a_new_array, fuzz_constant_written_after_an_if,
            fuzz_loop_result_updated, fuzz_counter_updated_in_an_if,
            fuzz_transposed_view_of_the_result_written, fuzz_element_assigned,
            fuzz_copy_of_a_view_of_the_argument, fuzz_reshape_divided_in_place,
            fuzz_swapped_view_zeroed, fuzz_counter_decremented,
            view_rebound_then_base_and_view_written, second_name_written_after_write_or_rebind,
            nested_if_then_write_in_the_branch, loop_writes_then_rebinds,
            loop_rebinds_on_some_iterations,
            reshape_of_a_result_whose_layout_depends_on_the_path, loop_changes_the_layout,
            two_ifs_then_write, for_loop_with_an_array_bound,
            original_written_then_read_through_the_result,
            view_of_the_original_written_after_a_loop, rebound_in_a_loop_body_if_then_written,
            fuzz_view_kept_by_a_link_only]


def _arguments(fn, scale):
    n = fn.__code__.co_argcount
    return [np.array((onp.arange(12, dtype="float32").reshape(3, 4) - 4 + k) * scale * 0.25)
            for k in range(n)]


@pytest.mark.parametrize("fn", COMPILED, ids=lambda f: f.__name__)
def test_compiled_in_strict_mode_and_equal_to_eager_on_every_path(fn):
    """Values, the caller's arguments afterwards and gradients, on both backends, with the
    tests true and false and the loops run no time, once or more."""
    for scale in (1.0, -1.0, 0.1, 3.0):
        findings = compare(fn, _arguments(fn, scale), _arguments(fn, -0.5 * scale),
                           strict=True)
        assert not findings, f"scale {scale}:\n" + "\n".join(map(repr, findings))


def swap(a0, a1):
    if a0.sum() > 0:
        a0, a1 = a1, a0
    a0 += 1
    return a0 * 1, a1 * 1


def view_of_itself_in_one_branch(a0):
    w = a0
    if a0.sum() > 0:
        a0 = a0[::-1]
    else:
        a0 = a0 * 2
    a0 += 1
    return w * 1, a0


def another_variable_in_one_branch(a0, a1):
    w = a0
    if a0.sum() > 0:
        a0 = a1
    a0 += 1
    return w * 1, a0 * 1, a1 * 1


@pytest.mark.parametrize("fn", [swap, view_of_itself_in_one_branch,
                                another_variable_in_one_branch], ids=lambda f: f.__name__)
def test_another_variables_array_on_one_path_runs_eagerly(fn):
    """A variable that is, on one path, another variable's array (or a view of its own)
    needs more than one link: that code runs eagerly with eager's results, and strict mode
    refuses it (the fuzzer's 'strict' finding)."""
    for scale in (1.0, -1.0):
        findings = compare(fn, _arguments(fn, scale), strict=False)
        assert findings and {f.stage for f in findings} == {"strict"}, findings
        assert "path" in findings[0].detail
