"""The gemm runtime: kiln's thread pool splitting one gemm into blocks over a BLAS."""
import ctypes
import os
import subprocess
import sys
import textwrap
import threading

import numpy as onp
import pytest

from kiln.backend.c import build
from kiln.backend.c.runtime import runtime

pytestmark = pytest.mark.skipif(not build.available(), reason="no C compiler")

_I = ctypes.c_int64
_SIG = [ctypes.c_int, ctypes.c_int, _I, _I, _I, ctypes.c_float, ctypes.c_void_p, _I,
        ctypes.c_void_p, _I, ctypes.c_float, ctypes.c_void_p]
_DSIG = [ctypes.c_int, ctypes.c_int, _I, _I, _I, ctypes.c_double, ctypes.c_void_p, _I,
         ctypes.c_void_p, _I, ctypes.c_double, ctypes.c_void_p]


def _gemm(dtype):
    rt = runtime()
    if rt is None or not rt.sgemm:
        pytest.skip("no BLAS found")
    address = rt.sgemm if dtype == onp.float32 else rt.dgemm
    return ctypes.CFUNCTYPE(None, *(_SIG if dtype == onp.float32 else _DSIG))(address)


def _check(dtype, M, N, K, ta, tb, seed=0, alpha=1.0, beta=0.0):
    rng = onp.random.default_rng(seed)
    a = rng.standard_normal((K, M) if ta else (M, K)).astype(dtype)
    b = rng.standard_normal((N, K) if tb else (K, N)).astype(dtype)
    c0 = rng.standard_normal((M, N)).astype(dtype)
    c = c0.copy() if beta else onp.full((M, N), onp.nan, dtype)
    _gemm(dtype)(ta, tb, M, N, K, alpha, a.ctypes.data, a.shape[1], b.ctypes.data, b.shape[1],
                 beta, c.ctypes.data)
    want = alpha * ((a.T if ta else a).astype(onp.float64) @
                    (b.T if tb else b).astype(onp.float64))
    if beta:
        want += beta * c0
    tol = 1e-4 if dtype == onp.float32 else 1e-10
    onp.testing.assert_allclose(c, want, rtol=tol, atol=tol * onp.sqrt(K))


# shapes above the parallel threshold, split by columns (N >= M) and by rows (M > N), with
# extents that are not multiples of the 16-wide block alignment
@pytest.mark.parametrize("M,N,K", [(64, 256, 512), (1000, 37, 300), (129, 1000, 70),
                                   (8, 4099, 64), (3000, 9, 128)])
@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_parallel_gemm_equals_numpy(M, N, K, ta, tb):
    _check(onp.float32, M, N, K, ta, tb)


@pytest.mark.parametrize("ta,tb", [(0, 1), (1, 0)])
def test_parallel_dgemm_equals_numpy(ta, tb):
    _check(onp.float64, 300, 200, 100, ta, tb)


@pytest.mark.parametrize("dtype", [onp.float32, onp.float64])
def test_alpha_and_beta_scale_and_accumulate(dtype):
    _check(dtype, 200, 300, 64, 1, 0, alpha=-0.25, beta=1.0)
    _check(dtype, 5, 40, 8, 0, 1, alpha=2.0, beta=0.5)


def test_concurrent_callers_each_get_their_own_result():
    errors = []

    def work(seed):
        try:
            for k in range(5):
                _check(onp.float32, 256, 300, 128, seed % 2, k % 2, seed=seed * 10 + k)
        except Exception as exc:     # reported below: pytest does not see thread failures
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


SCRIPT = textwrap.dedent("""
    import numpy as onp, kiln
    from kiln import np
    from kiln.backend.c.runtime import runtime
    from kiln.backend.c.blas import find_blas
    onp.random.seed(0)
    w = np.array(onp.random.rand(300, 200).astype("float32"))
    x = np.array(onp.random.rand(64, 200).astype("float32"))
    f = kiln.hybridize(lambda x, w: np.maximum(np.dot(x, w.T), 0), backend="c")
    out = f(x, w).asnumpy()
    ref = onp.maximum(x.asnumpy() @ w.asnumpy().T, 0)
    blas = find_blas()
    print(blas.name if blas else "none", float(abs(out - ref).max()))
""")


@pytest.mark.parametrize("choice,threads", [("openblas", "1"), ("openblas", "2"),
                                            ("mkl", "2"), ("none", "2")])
def test_blas_choice_and_thread_count(choice, threads, tmp_path):
    env = dict(os.environ, KILN_BLAS=choice, KILN_NUM_THREADS=threads,
               KILN_CACHE_DIR=str(tmp_path))
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    name, err = res.stdout.split()
    if choice == "mkl" and name == "none":
        pytest.skip("MKL is not installed (the optional kiln[mkl] extra)")
    assert name == choice
    assert float(err) < 1e-3


@pytest.mark.parametrize("rows", [1, 3, 7])
@pytest.mark.parametrize("features", [128, 200, 257])
def test_small_batch_layers_split_over_threads_equal_numpy(rows, features):
    import kiln
    from kiln import np
    rng = onp.random.default_rng(rows * 1000 + features)
    x = rng.standard_normal((rows, 600)).astype("float32")
    w = rng.standard_normal((features, 600)).astype("float32")
    f = kiln.hybridize(lambda x, w: np.dot(x, w.T), backend="c")
    got = f(np.array(x), np.array(w)).asnumpy()
    onp.testing.assert_allclose(got, x.astype(onp.float64) @ w.T.astype(onp.float64),
                                rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("K", [1, 15, 16, 17, 31, 32, 33, 100])
@pytest.mark.parametrize("features", [1, 3, 4, 5, 9])
def test_kilns_own_dot_kernels_cover_every_remainder(K, features):
    # below 8 rows kiln's own loops (dot.py where AVX-512 exists) run instead of BLAS;
    # the sizes hit the 32-wide, the 16-wide and the masked part of a row, and the rows
    # left over after groups of four
    import kiln
    from kiln import np
    rng = onp.random.default_rng(K * 100 + features)
    x = rng.standard_normal((3, K)).astype("float32")
    w = rng.standard_normal((features, K)).astype("float32")
    f = kiln.hybridize(lambda x, w: np.dot(x, w.T), backend="c")
    got = f(np.array(x), np.array(w)).asnumpy()
    onp.testing.assert_allclose(got, x.astype(onp.float64) @ w.T.astype(onp.float64),
                                rtol=1e-5, atol=1e-5)


_POOL_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <stdint.h>
int kiln_rt_init(void *s, void *d, void *local, int workers);
void kiln_rt_parallel(void (*fn)(void *, int64_t), void *ctx, int64_t nblocks);
typedef struct { atomic_int runs[16]; int64_t n; atomic_int returned, late; } job;
static void block(void *p, int64_t b) {
  job *j = p;
  if (atomic_load(&j->returned)) atomic_fetch_add(&j->late, 1);
  atomic_fetch_add(&j->runs[b], 1);
  for (volatile int i = 0; i < 50; i++) {}
}
#define RING 1024
static job ring[RING];
int main(int argc, char **argv) {
  long iters = atol(argv[2]), bad = 0;
  kiln_rt_init(0, 0, 0, atoi(argv[1]));
  for (long it = 0; it < iters + RING; it++) {
    job *j = &ring[it % RING];
    if (it >= RING) {          /* the job that used this slot: nothing ran after it ended */
      bad += atomic_load(&j->late);
      for (int b = 0; b < j->n; b++) bad += atomic_load(&j->runs[b]) != 1;
    }
    if (it >= iters) continue;
    memset(j, 0, sizeof *j);
    j->n = (it & 1) ? 16 : 2;  /* jobs of different sizes back to back */
    kiln_rt_parallel(block, j, j->n);
    atomic_store(&j->returned, 1);
    for (int b = 0; b < j->n; b++) bad += atomic_load(&j->runs[b]) != 1;
  }
  printf("%ld\n", bad);
  return 0;
}
"""


@pytest.mark.parametrize("workers", [1, 3])
def test_pool_runs_every_block_once_and_none_after_the_call_returns(workers, tmp_path):
    from kiln.backend.c.runtime import source_for
    (tmp_path / "rt.c").write_text(source_for(64))
    (tmp_path / "driver.c").write_text(_POOL_DRIVER)
    exe = tmp_path / "driver"
    cc = os.environ.get("CC") or "cc"
    subprocess.run([cc, "-O2", "-pthread", "-std=gnu11", str(tmp_path / "driver.c"),
                    str(tmp_path / "rt.c"), "-o", str(exe)], check=True, timeout=300)
    res = subprocess.run([str(exe), str(workers), "200000"], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "0"


@pytest.mark.parametrize("rows, k, units", [(4, 4096, 64), (2, 32, 7), (1, 300, 20)])
def test_eager_dense_on_few_rows_equals_the_compiled_one(rows, k, units):
    """Below GEMM_BLAS_MIN_ROWS rows compiled programs run kiln's own loops; eager matmuls
    run the same loops (eager_gemm.py), so the two agree to the bit (on the BLAS, a batch
    of 4 summed in another order and differed by 2e-5)."""
    from kiln import nd
    from kiln.gluon import nn
    rng = onp.random.default_rng(rows)
    net = nn.Dense(units)
    net.initialize()
    x = nd.array(rng.uniform(size=(rows, k)).astype("float32"))
    eager = net(x).asnumpy()
    net.hybridize(backend="c")
    onp.testing.assert_array_equal(net(x).asnumpy(), eager)


_STRAGGLER_DRIVER = r"""
#define _DEFAULT_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>
int kiln_rt_init(void *s, void *d, void *local, int workers);
void kiln_rt_parallel(void (*fn)(void *, int64_t), void *ctx, int64_t nblocks);
void kiln_rt_pool_stats(int64_t *out);
typedef struct { atomic_int runs[4]; pthread_t caller; int stall; } job;
static atomic_long stalls;
static void block(void *p, int64_t b) {
  job *j = p;
  /* a worker descheduled in the middle of its block, as on a busy machine */
  if (j->stall && !pthread_equal(pthread_self(), j->caller)) {
    atomic_fetch_add(&stalls, 1);
    usleep(2000);
  }
  for (volatile int i = 0; i < 20000; i++) {}    /* long enough for the worker to join */
  atomic_fetch_add(&j->runs[b], 1);
}
int main(void) {
  long bad = 0;
  kiln_rt_init(0, 0, 0, 1);
  for (long it = 0; it < 20000 && atomic_load(&stalls) < 20; it++) {
    job j = {{0}, pthread_self(), it % 10 == 0};
    kiln_rt_parallel(block, &j, 4);
    for (int b = 0; b < 4; b++) bad += atomic_load(&j.runs[b]) != 1;
  }
  int64_t stats[2];
  kiln_rt_pool_stats(stats);
  printf("%ld %ld %lld %lld\n", bad, atomic_load(&stalls), (long long)stats[0],
         (long long)stats[1]);
  return 0;
}
"""


def test_pool_runs_jobs_alone_after_a_worker_was_descheduled(tmp_path):
    # a worker sleeping in the middle of its block stands for one the OS preempted: the
    # job still runs every block once, the pool counts it late and runs the next jobs on
    # the caller alone (then tries its workers again)
    from kiln.backend.c.runtime import source_for
    (tmp_path / "rt.c").write_text(source_for(64))
    (tmp_path / "driver.c").write_text(_STRAGGLER_DRIVER)
    exe = tmp_path / "driver"
    cc = os.environ.get("CC") or "cc"
    subprocess.run([cc, "-O2", "-pthread", "-std=gnu11", str(tmp_path / "driver.c"),
                    str(tmp_path / "rt.c"), "-o", str(exe)], check=True, timeout=300)
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    bad, stalls, late, alone = map(int, res.stdout.split())
    assert bad == 0
    if stalls < 5:
        pytest.skip("the worker hardly ever took a block (a very busy machine)")
    assert late >= 1 and alone >= 1
