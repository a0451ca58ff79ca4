"""MXNet's `mx.test_utils` (1.9.1's public CPU helpers): comparisons with tolerances by
dtype (comparison.py), random test inputs and NumPy references (inputs.py), checks of
symbols and blocks (checks.py), statistical checks of random generators (statistics.py),
and the test harness (harness.py).

Like MXNet's module it has no `__all__`, so `from mxnet.test_utils import *` also gives a
test `mx`, `np` (NumPy), `Symbol` and `Context`, as MXNet's tests expect.
"""
import os  # noqa: F401  (MXNet's test_utils leaks its standard modules to star-imports too)
import sys

import numpy as np  # noqa: F401  (MXNet's test_utils leaks these names to star-imports)
import numpy.random as rnd  # noqa: F401

import kiln
from ..._core.context import Context, cpu, current_context  # noqa: F401
from ..sym import Symbol  # noqa: F401
from ..nd import array  # noqa: F401
from ..nd.sparse import rand_sparse_ndarray  # noqa: F401
from ..util import use_np  # noqa: F401
from .comparison import (  # noqa: F401
    almost_equal, assert_allclose, assert_almost_equal, assert_almost_equal_ignore_nan,
    assert_almost_equal_with_err, assert_exception, compare_ndarray_tuple, compare_optimizer,
    default_atols, default_context, default_device, default_dtype, default_numeric_eps,
    default_rtols, effective_dtype, get_atol, get_etol, get_rtol, get_tolerance, get_tols,
    same, same_array, set_default_context, set_default_device)
from .inputs import (  # noqa: F401
    assign_each, assign_each2, collapse_sum_like, create_2d_tensor, create_sparse_array,
    create_sparse_array_zd, create_vector,
    get_identity_mat, get_identity_mat_batch, new_matrix_with_real_eigvals_2d,
    new_matrix_with_real_eigvals_nd, new_orthonormal_matrix_2d,
    new_sym_matrix_with_real_eigvals_2d, new_sym_matrix_with_real_eigvals_nd, np_reduce,
    rand_coord_2d, rand_ndarray, rand_shape_2d, rand_shape_3d, rand_shape_nd, random_arrays,
    random_sample, random_uniform_arrays)
from .checks import (  # noqa: F401
    check_consistency, check_gluon_hybridize_consistency, check_numeric_gradient,
    check_symbolic_backward, check_symbolic_forward, numeric_grad, same_symbol_structure,
    simple_forward)
from .statistics import (  # noqa: F401
    chi_square_check, gen_buckets_probs_with_ppf, mean_check, var_check, verify_generator)
from .harness import (  # noqa: F401
    DummyIter, discard_stderr, environment, getenv, has_tvm_ops, is_aarch64_run, is_cd_run,
    is_op_runnable, list_gpus, retry, setenv)

# the `mx` a star-import leaks must be the module the test imported as mxnet (the alias,
# whose attributes include MXNet's top-level names such as use_np_shape), not kiln itself
mx = sys.modules.get("mxnet") if getattr(sys.modules.get("mxnet"), "__kiln_alias__",
                                         False) else kiln


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """MXNet's test_utils.download: `url` to `fname` (its last path part by default), in
    `dirname` when given; a file already there is kept unless `overwrite`. Returns fname."""
    from ...gluon.utils import download as fetch
    if fname is None:
        fname = url.split("/")[-1]
    if dirname is not None:
        fname = os.path.join(dirname, fname)
    if not overwrite and os.path.exists(fname):
        return fname
    if os.path.dirname(fname):
        os.makedirs(os.path.dirname(fname), exist_ok=True)
    return fetch(url, fname, overwrite=True, retries=retries)
