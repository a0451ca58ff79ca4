"""The gemm runtime shared by every compiled program: a BLAS behind kiln's own thread pool.

Generated code calls `kiln_rt_sgemm(ta, tb, M, N, K, A, lda, B, ldb, C)` through a pointer.
The runtime cuts C into column (or row) blocks and hands them to the calling thread and
to worker threads, each calling the BLAS single-threaded on its block. Blocks are claimed
from one atomic ticket, so a worker that the OS has not scheduled simply claims nothing
and the caller finishes the job alone: on a shared machine a busy core costs its share of
the speed-up, never a stall. Workers spin briefly after a job (gemms in a program come back
to back) and then sleep.

The library is compiled once per BLAS integer width and cached like generated code; the
generated code never sees the BLAS's calling convention, only this function's.
"""
import ctypes
import os
import threading

from . import build
from .blas import find_blas

# below this many multiply-adds a gemm runs in one BLAS call on the calling thread
PARALLEL_MIN_MADDS = 1 << 20
# a block of C gets at least this many multiply-adds, so the per-block call cost stays small
BLOCK_MIN_MADDS = 1 << 18
SPIN_MICROSECONDS = 200
BLOCKS_PER_THREAD = int(__import__("os").environ.get("KB", "2"))

_SOURCE = r"""
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

int kiln_abi_version(void) { return 1; }

typedef KILN_BLAS_INT bint;
typedef void (*sgemm_t)(int, int, int, bint, bint, bint, float, const float *, bint,
                        const float *, bint, float, float *, bint);
typedef void (*dgemm_t)(int, int, int, bint, bint, bint, double, const double *, bint,
                        const double *, bint, double, double *, bint);
typedef int (*threads_local_t)(int);

static sgemm_t blas_s;
static dgemm_t blas_d;
static threads_local_t threads_local;   /* BLAS call runs single-threaded on this thread */

typedef struct {
  int ta, tb, is_double, by_columns;
  int64_t M, N, K, lda, ldb, block, nblocks;
  const void *A, *B;
  void *C;
} job_t;

static job_t job;
/* high 32 bits: job generation; low 32 bits: next block to claim */
static _Atomic uint64_t ticket;
static atomic_long finished;
static atomic_int sleepers;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t call_mutex = PTHREAD_MUTEX_INITIALIZER;
static int n_workers;

static void run_block(const job_t *j, int64_t b) {
  int64_t lo = b * j->block, hi = lo + j->block;
  int64_t M = j->M, N = j->N, ldc = j->N;
  size_t sz = j->is_double ? 8 : 4;
  const char *A = j->A, *B = j->B;
  char *C = j->C;
  if (j->by_columns) {
    if (hi > N) hi = N;
    B += (size_t)(j->tb ? lo * j->ldb : lo) * sz;
    C += (size_t)lo * sz;
    N = hi - lo;
  } else {
    if (hi > M) hi = M;
    A += (size_t)(j->ta ? lo : lo * j->lda) * sz;
    C += (size_t)(lo * ldc) * sz;
    M = hi - lo;
  }
  int ta = j->ta ? 112 : 111, tb = j->tb ? 112 : 111;
  if (j->is_double)
    blas_d(101, ta, tb, M, N, j->K, 1.0, (const double *)A, j->lda, (const double *)B,
           j->ldb, 0.0, (double *)C, ldc);
  else
    blas_s(101, ta, tb, M, N, j->K, 1.0f, (const float *)A, j->lda, (const float *)B,
           j->ldb, 0.0f, (float *)C, ldc);
}

/* claim and run blocks of the job of generation `gen` until none is left */
static void help(uint32_t gen) {
  for (;;) {
    uint64_t t = atomic_load(&ticket);
    if ((uint32_t)(t >> 32) != gen) return;
    int64_t b = (int64_t)(t & 0xffffffffu);
    if (b >= job.nblocks) return;
    if (!atomic_compare_exchange_weak(&ticket, &t, t + 1)) continue;
    /* job cannot change before this block is counted finished */
    run_block(&job, b);
    atomic_fetch_add(&finished, 1);
  }
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static void *worker(void *unused) {
  (void)unused;
  if (threads_local) threads_local(1);
  uint32_t seen = (uint32_t)(atomic_load(&ticket) >> 32);
  for (;;) {
    double start = now_us();
    int spins = 0;
    while ((uint32_t)(atomic_load(&ticket) >> 32) == seen) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if (++spins % 256 == 0 && now_us() - start > SPIN_US) {
        pthread_mutex_lock(&mutex);
        atomic_fetch_add(&sleepers, 1);
        while ((uint32_t)(atomic_load(&ticket) >> 32) == seen)
          pthread_cond_wait(&wake, &mutex);
        atomic_fetch_sub(&sleepers, 1);
        pthread_mutex_unlock(&mutex);
        break;
      }
    }
    seen = (uint32_t)(atomic_load(&ticket) >> 32);
    help(seen);
  }
  return 0;
}

int kiln_rt_init(void *s, void *d, void *local, int workers) {
  blas_s = (sgemm_t)s; blas_d = (dgemm_t)d; threads_local = (threads_local_t)local;
  for (int i = 0; i < workers; i++) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, worker, 0) == 0) n_workers++;
    pthread_attr_destroy(&attr);
  }
  return n_workers;
}

static void gemm(int is_double, int ta, int tb, int64_t M, int64_t N, int64_t K,
                 const void *A, int64_t lda, const void *B, int64_t ldb, void *C) {
  int previous = threads_local ? threads_local(1) : 0;
  int64_t madds = M * N * K;
  int64_t nblocks = 1, block = N;
  int by_columns = N >= M;
  if (n_workers > 0 && madds >= PARALLEL_MIN) {
    int64_t extent = by_columns ? N : M;
    int64_t unit = by_columns ? M * K : N * K;       /* madds per column (row) of C */
    int64_t align = 16;
    block = (BLOCK_MIN + unit - 1) / unit;
    block = (block + align - 1) / align * align;
    int64_t most = (extent + align - 1) / align;      /* never more blocks than aligned cuts */
    nblocks = (extent + block - 1) / block;
    if (nblocks > BLOCKS_PER_THREAD * (n_workers + 1)) {
      nblocks = BLOCKS_PER_THREAD * (n_workers + 1);
      block = ((extent + nblocks - 1) / nblocks + align - 1) / align * align;
      nblocks = (extent + block - 1) / block;
    }
    if (nblocks > most) nblocks = most;
  }
  job_t mine = {ta, tb, is_double, by_columns, M, N, K, lda, ldb, block, nblocks, A, B, C};
  if (nblocks <= 1) {
    mine.by_columns = 1; mine.block = N; mine.nblocks = 1;
    run_block(&mine, 0);
  } else {
    /* one parallel job at a time; concurrent callers queue here */
    pthread_mutex_lock(&call_mutex);
    job = mine;
    atomic_store(&finished, 0);
    uint32_t gen = (uint32_t)(atomic_load(&ticket) >> 32) + 1;
    atomic_store(&ticket, (uint64_t)gen << 32);
    if (atomic_load(&sleepers) > 0) {
      pthread_mutex_lock(&mutex);
      pthread_cond_broadcast(&wake);
      pthread_mutex_unlock(&mutex);
    }
    help(gen);
    while (atomic_load(&finished) < nblocks) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    pthread_mutex_unlock(&call_mutex);
  }
  if (threads_local) threads_local(previous);
}

void kiln_rt_sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A,
                   int64_t lda, const float *B, int64_t ldb, float *C) {
  gemm(0, ta, tb, M, N, K, A, lda, B, ldb, C);
}

void kiln_rt_dgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, const double *A,
                   int64_t lda, const double *B, int64_t ldb, double *C) {
  gemm(1, ta, tb, M, N, K, A, lda, B, ldb, C);
}
"""

_runtime = None
_lock = threading.Lock()


def thread_count():
    """Threads a gemm may use: KILN_NUM_THREADS, else the CPUs this process may run on."""
    value = os.environ.get("KILN_NUM_THREADS")
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            pass
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def source_for(bits):
    defines = (f"#define KILN_BLAS_INT {'int64_t' if bits == 64 else 'int32_t'}\n"
               f"#define PARALLEL_MIN {PARALLEL_MIN_MADDS}\n"
               f"#define BLOCK_MIN {BLOCK_MIN_MADDS}\n"
               f"#define SPIN_US {SPIN_MICROSECONDS}\n"
               f"#define BLOCKS_PER_THREAD {BLOCKS_PER_THREAD}\n")
    return defines + _SOURCE


def gemm_runtime():
    """(address of kiln_rt_sgemm, address of kiln_rt_dgemm, BLAS name), or None when no
    BLAS was found (generated code then uses its own loops)."""
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = _start() or False
        return _runtime or None


def _start():
    blas = find_blas()
    if blas is None:
        return None
    lib = build.load(source_for(blas.bits), extra_flags=("-pthread",))
    lib.kiln_rt_init.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int]
    lib.kiln_rt_init(blas.sgemm, blas.dgemm, blas.threads_local, thread_count() - 1)
    address = lambda name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value  # noqa: E731
    return address("kiln_rt_sgemm"), address("kiln_rt_dgemm"), blas.name
