"""mx.test_utils' MXNet 1.9.1 helpers: values checked against MXNet 1.9.1 itself."""
import os
import subprocess
import sys

import numpy as onp
import pytest

import kiln
from kiln import nd
from kiln import test_utils as tu


def test_star_import_leaks_mxnets_names():
    scope = {}
    exec("from kiln.test_utils import *", scope)
    assert scope["np"] is onp and scope["mx"] is kiln
    assert scope["Symbol"] is kiln.sym.Symbol and scope["Context"] is kiln.Context
    for name in ("np_reduce", "collapse_sum_like", "retry", "is_aarch64_run",
                 "compare_optimizer", "discard_stderr", "assert_exception", "environment",
                 "check_consistency", "rand_ndarray", "rand_shape_nd", "get_tols"):
        assert callable(scope[name]), name


def test_reference_reductions_as_mxnet():
    a = onp.arange(24.0).reshape(2, 3, 4)
    assert tu.np_reduce(a, (0, 2), True, onp.sum).tolist() == [[[60.0], [92.0], [124.0]]]
    assert tu.np_reduce(a, None, False, onp.max) == 23.0
    assert tu.collapse_sum_like(a, (3, 1)).tolist() == [[60.0], [92.0], [124.0]]
    assert tu.collapse_sum_like(onp.zeros((2, 0)), (1, 0)).shape == (1, 0)
    with pytest.raises(ValueError, match="does not broadcast"):
        tu.collapse_sum_like(a, (2, 4))
    assert tu.assign_each2(onp.array([1.0, 2.0]), onp.array([3.0, 4.0]),
                           lambda x, y: x * y).tolist() == [3.0, 8.0]


def test_tolerances_by_dtype_as_mxnet():
    assert tu.get_tols(onp.zeros(2, onp.float16), onp.zeros(2, onp.float32), None, None) == \
        (0.01, 0.1)
    assert tu.get_tols(1.0, 2.0, 0.5, None)[0] == 0.5 and tu.get_etol() == 0
    tu.assert_almost_equal(onp.array([1.0, onp.nan]), onp.array([1.0, onp.nan]),
                           equal_nan=True)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(onp.array([1.0, onp.nan]), onp.array([1.0, onp.nan]))
    a, b = onp.zeros(100), onp.zeros(100)
    b[:3] = 1
    tu.assert_almost_equal_with_err(a, b, etol=0.05)
    with pytest.raises(AssertionError, match="more than etol"):
        tu.assert_almost_equal_with_err(a, b, etol=0.01)


def test_retry_reruns_only_failed_assertions():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) == 3
    flaky()
    assert len(calls) == 3

    @tu.retry(2)
    def always():
        calls.append(1)
        raise AssertionError("no")
    with pytest.raises(AssertionError, match="no"):
        always()
    assert len(calls) == 5


def test_discard_stderr_silences_file_descriptor_2():
    code = ("import os, sys\nfrom kiln.test_utils import discard_stderr\n"
            "with discard_stderr():\n    os.write(2, b'hidden')\n    print('x', file=sys.stderr)\n"
            "os.write(2, b'shown')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          env={**os.environ, "PYTHONPATH": os.getcwd()}, timeout=120)
    assert done.returncode == 0 and done.stderr == b"shown"


def test_machine_facts():
    assert tu.is_aarch64_run() is (os.uname().machine == "aarch64")
    assert list(tu.list_gpus()) == [] and tu.has_tvm_ops() is False


def test_compare_optimizer_agrees_and_notices_a_difference():
    from kiln import optimizer
    tu.compare_optimizer(optimizer.SGD(learning_rate=0.1, momentum=0.9),
                         optimizer.SGD(learning_rate=0.1, momentum=0.9), (3, 4), "float32")
    tu.compare_optimizer(optimizer.Adam(), optimizer.Adam(), [(2,), (3, 2)], "float32",
                         ntensors=2)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(optimizer.SGD(learning_rate=0.1), optimizer.SGD(learning_rate=0.2),
                             (3, 4), "float32")


def test_check_consistency_across_dtypes():
    sym = kiln.sym.FullyConnected(kiln.sym.var("data"), num_hidden=3, name="fc")
    runs = [{"ctx": kiln.cpu(), "data": (2, 4), "type_dict": {"data": onp.float64}},
            {"ctx": kiln.cpu(), "data": (2, 4), "type_dict": {"data": onp.float32}}]
    gt = tu.check_consistency(sym, runs)
    assert sorted(gt) == ["data", "fc_bias", "fc_output", "fc_weight"]   # as MXNet 1.9.1's
    wrong = {k: v + 1 for k, v in gt.items()}
    with pytest.raises(AssertionError):
        tu.check_consistency(sym, runs, ground_truth=wrong)
    tu.check_consistency(sym, runs, ground_truth=wrong, raise_on_err=False)


def test_generator_checks_accept_the_right_distribution_and_reject_a_wrong_one():
    pytest.importorskip("scipy")
    from scipy import stats
    kiln.random.seed(0)
    normal = lambda n: nd.random.normal(0, 1, shape=(n,)).asnumpy()  # noqa: E731
    assert tu.mean_check(normal, 0, 1, 20000) and tu.var_check(normal, 1, 20000)
    assert not tu.mean_check(lambda n: normal(n) + 0.5, 0, 1, 20000)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda x: stats.norm.ppf(x, 0, 1), 5)
    assert len(tu.verify_generator(normal, buckets, probs, nsamples=20000, nrepeat=3)) == 3
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda n: normal(n) * 2, buckets, probs, nsamples=20000, nrepeat=3)
    poisson = lambda n: nd.random.poisson(lam=2.0, shape=(n,)).asnumpy()  # noqa: E731
    values = list(range(12))
    p, observed, _ = tu.chi_square_check(poisson, values,
                                         [stats.poisson.pmf(v, 2.0) for v in values], 20000)
    assert observed.sum() > 19900 and p > 1e-4


def test_matrices_with_known_eigenvalues_and_inputs():
    onp.random.seed(1)
    m = tu.new_matrix_with_real_eigvals_nd((2, 4, 4))
    assert m.shape == (2, 4, 4) and onp.abs(onp.linalg.eigvals(m).imag).max() < 1e-8
    s = tu.new_sym_matrix_with_real_eigvals_2d(5)
    onp.testing.assert_allclose(s, s.T, atol=1e-12)
    assert onp.abs(onp.linalg.eigvalsh(s)).max() <= 10 + 1e-9
    q = tu.new_orthonormal_matrix_2d(4)
    onp.testing.assert_allclose(q.T @ q, onp.eye(4), atol=1e-12)
    assert tu.create_2d_tensor(3, 2).asnumpy().tolist() == [[0, 0], [1, 1], [2, 2]]
    assert tu.create_vector(4).asnumpy().tolist() == [0, 1, 2, 3]
    assert tu.get_identity_mat_batch(3).shape == (2, 3, 3)


def test_same_symbol_structure():
    a, b = kiln.sym.var("a"), kiln.sym.var("b")
    assert tu.same_symbol_structure(kiln.sym.relu(a + b), kiln.sym.relu(b + a))
    assert not tu.same_symbol_structure(kiln.sym.relu(a + b), kiln.sym.sigmoid(a + b))


def test_sparse_test_inputs_as_mxnet():
    scope = {}
    exec("from kiln.test_utils import *", scope)
    assert scope["rnd"] is onp.random and scope["array"] is kiln.nd.array
    for name in ("rand_sparse_ndarray", "create_sparse_array", "create_sparse_array_zd"):
        assert callable(scope[name]), name
    csr = tu.rand_ndarray((4, 5), "csr", density=0.5)
    rsp = tu.rand_ndarray((4, 5), "row_sparse", density=1)
    assert (csr.stype, csr.shape, rsp.stype, rsp.shape) == ("csr", (4, 5), "row_sparse", (4, 5))
    assert rsp.indices.asnumpy().tolist() == [0, 1, 2, 3]
    zd = tu.create_sparse_array_zd((6, 2), "row_sparse", density=0.9, rsp_indices=[4, 1])
    assert zd.indices.asnumpy().tolist() == [1, 4]


def test_compare_optimizer_with_many_tensors():
    from kiln.optimizer import SGD
    tu.compare_optimizer(SGD(learning_rate=0.1), SGD(learning_rate=0.1), [(2, 3), (4,)],
                         "float32", ntensors=2)
    with pytest.raises(AssertionError):     # a different update must be caught
        tu.compare_optimizer(SGD(learning_rate=0.1), SGD(learning_rate=0.2), (4, 3), "float32")
