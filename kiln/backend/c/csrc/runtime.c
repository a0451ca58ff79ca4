/* The runtime library that compiled programs call into: kiln's thread pool
   (kiln_rt_parallel) and the gemm that cuts a BLAS call into blocks run in parallel
   (kiln_rt_sgemm, kiln_rt_dgemm); runtime.py explains both. runtime.py compiles it as one
   translation unit with packed.c, included at the end, and defines before it
   KILN_BLAS_INT, PARALLEL_MIN, BLOCK_MIN, SPIN_US, CALLER_SPIN_US, LATE_US,
   SERIAL_MIN_US, SERIAL_MAX_US, BLOCKS_PER_THREAD and packed.py's PACK_*. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

int kiln_abi_version(void) { return 1; }

typedef KILN_BLAS_INT bint;
typedef void (*sgemm_t)(int, int, int, bint, bint, bint, float, const float *, bint,
                        const float *, bint, float, float *, bint);
typedef void (*dgemm_t)(int, int, int, bint, bint, bint, double, const double *, bint,
                        const double *, bint, double, double *, bint);
typedef int (*threads_local_t)(int);
typedef void (*block_fn)(void *ctx, int64_t block);

static sgemm_t blas_s;
static dgemm_t blas_d;
static threads_local_t threads_local;   /* BLAS call runs single-threaded on this thread */

#define MAX_THREADS 64
/* The job being run: blocks [0, nblocks), cut into `parts` contiguous ranges, range r
   first claimed by participant r (the caller is 0), so that a block lands on the same core
   call after call (its data stays in that core's cache) unless that core is busy. */
static struct { block_fn fn; void *ctx; int64_t nblocks; int parts; } job;
/* per range, one atomic word: the job generation (16 bits), the range's end (24 bits) and
   its next block to claim (24 bits). The end lives in the word, not in `job`, so a thread
   still looking at a finished job never judges its stale range by the next job's size;
   each word on its own cache line, so claims in one range do not slow the others */
#define FIELD ((1ull << 24) - 1)
#define TICKET(gen, end, next) \
  (((uint64_t)((gen) & 0xffffu) << 48) | ((uint64_t)(end) << 24) | (uint64_t)(next))
static struct { _Atomic uint64_t v; char pad[56]; } next_block[MAX_THREADS]
    __attribute__((aligned(64)));
static _Atomic uint32_t generation __attribute__((aligned(64)));
static atomic_long finished __attribute__((aligned(64)));
static atomic_int sleepers;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t call_mutex = PTHREAD_MUTEX_INITIALIZER;
static int n_workers;
/* The caller waiting for a block another thread claimed: it spins half as long as its own
   part took (at least CALLER_SPIN_US), then sleeps on `done` until the last block is counted. A worker the OS preempted mid-block
   then gets the caller's core (an idle core takes a waiting thread at once) instead of
   waiting for its own core while the caller spins on it. */
static atomic_int caller_waiting;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
/* When the wait for other threads' blocks is longer than the caller's own part of the job
   plus LATE_US, a participant was descheduled: cores are shared with other work. The
   caller then runs the next jobs alone for a while (from SERIAL_MIN_US, doubling while
   parallel jobs keep coming back late, up to SERIAL_MAX_US); an on-time parallel job
   resets it. Under call_mutex. */
static double serial_until, serial_span = SERIAL_MIN_US;
static int64_t late_jobs, serial_jobs;

static void pause_cpu(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static int64_t range_start(int64_t nblocks, int parts, int r) {
  return nblocks * r / parts;
}

/* claim and run blocks of job `gen`, own range first, then the others' leftovers */
static void help(uint32_t gen, int self) {
  int parts = job.parts;    /* only bounds the ranges looked at; claims check the ticket */
  if (parts < 1 || parts > MAX_THREADS) return;
  for (int k = 0; k < parts; k++) {
    int r = (self + k) % parts;
    for (;;) {
      uint64_t t = atomic_load(&next_block[r].v);
      if ((t >> 48) != (gen & 0xffffu)) return;      /* that job is over */
      int64_t end = (int64_t)((t >> 24) & FIELD), b = (int64_t)(t & FIELD);
      if (b >= end) break;
      if (!atomic_compare_exchange_weak(&next_block[r].v, &t, t + 1)) continue;
      /* a successful claim is of the current job's block b, which cannot finish (and so
         the job cannot change) before this block is counted */
      int64_t total = job.nblocks;    /* this job's, for the same reason */
      job.fn(job.ctx, b);
      if (atomic_fetch_add(&finished, 1) + 1 == total && atomic_load(&caller_waiting)) {
        pthread_mutex_lock(&mutex);
        pthread_cond_signal(&done);
        pthread_mutex_unlock(&mutex);
      }
    }
  }
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static void *worker(void *arg) {
  int self = (int)(intptr_t)arg;
  if (threads_local) threads_local(1);
  uint32_t seen = atomic_load(&generation);
  for (;;) {
    double start = now_us();
    int spins = 0;
    while (atomic_load(&generation) == seen) {
      pause_cpu();
      if (++spins % 256 == 0 && now_us() - start > SPIN_US) {
        pthread_mutex_lock(&mutex);
        atomic_fetch_add(&sleepers, 1);
        while (atomic_load(&generation) == seen) pthread_cond_wait(&wake, &mutex);
        atomic_fetch_sub(&sleepers, 1);
        pthread_mutex_unlock(&mutex);
        break;
      }
    }
    seen = atomic_load(&generation);
    help(seen, self);
  }
  return 0;
}

/* until all nblocks of the current job are counted: spin (for half as long as the
   caller's own part took, at least CALLER_SPIN_US: a worker running alongside is at most
   about one block behind, and claims are of blocks of two or more per thread), then sleep
   (see `done`) */
static void wait_for(int64_t nblocks, double since, double spin_us) {
  int spins = 0;
  if (spin_us < CALLER_SPIN_US) spin_us = CALLER_SPIN_US;
  while (atomic_load(&finished) < nblocks) {
    pause_cpu();
    if (++spins % 64 == 0 && now_us() - since > spin_us) {
      pthread_mutex_lock(&mutex);
      atomic_store(&caller_waiting, 1);
      while (atomic_load(&finished) < nblocks) pthread_cond_wait(&done, &mutex);
      atomic_store(&caller_waiting, 0);
      pthread_mutex_unlock(&mutex);
    }
  }
}

int kiln_rt_init(void *s, void *d, void *local, int workers) {
  blas_s = (sgemm_t)s; blas_d = (dgemm_t)d; threads_local = (threads_local_t)local;
  if (workers > MAX_THREADS - 1) workers = MAX_THREADS - 1;
  for (int i = 0; i < workers; i++) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, worker, (void *)(intptr_t)(n_workers + 1)) == 0)
      n_workers++;
    pthread_attr_destroy(&attr);
  }
  return n_workers;
}

int kiln_rt_threads(void) { return n_workers + 1; }

/* run fn(ctx, b) for b in [0, nblocks) on the caller and the workers; returns when all ran */
void kiln_rt_parallel(block_fn fn, void *ctx, int64_t nblocks) {
  if (n_workers == 0 || nblocks <= 1 || nblocks > (int64_t)FIELD) {
    for (int64_t b = 0; b < nblocks; b++) fn(ctx, b);
    return;
  }
  pthread_mutex_lock(&call_mutex);       /* one parallel job at a time */
  double start = now_us();
  if (start < serial_until) {
    serial_jobs++;
    for (int64_t b = 0; b < nblocks; b++) fn(ctx, b);
    pthread_mutex_unlock(&call_mutex);
    return;
  }
  int parts = n_workers + 1 < nblocks ? n_workers + 1 : (int)nblocks;
  uint32_t gen = atomic_load(&generation) + 1;
  job.fn = fn; job.ctx = ctx; job.nblocks = nblocks; job.parts = parts;
  atomic_store(&finished, 0);
  for (int r = 0; r < parts; r++)
    atomic_store(&next_block[r].v, TICKET(gen, range_start(nblocks, parts, r + 1),
                                          range_start(nblocks, parts, r)));
  atomic_store(&generation, gen);
  if (atomic_load(&sleepers) > 0) {
    pthread_mutex_lock(&mutex);
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&mutex);
  }
  help(gen, 0);
  double own = now_us();
  wait_for(nblocks, own, (own - start) / 2);
  double late = now_us() - own;
  if (late > (own - start) + LATE_US) {
    late_jobs++;
    serial_until = own + late + serial_span;
    serial_span = serial_span * 2 < SERIAL_MAX_US ? serial_span * 2 : SERIAL_MAX_US;
  } else {
    serial_span = SERIAL_MIN_US;
  }
  pthread_mutex_unlock(&call_mutex);
}

/* (jobs that came back late, jobs run on the caller alone since), for tests */
void kiln_rt_pool_stats(int64_t *out) {
  pthread_mutex_lock(&call_mutex);
  out[0] = late_jobs; out[1] = serial_jobs;
  pthread_mutex_unlock(&call_mutex);
}

/* ---- gemm: C = alpha op(A) op(B) + beta C, row-major, C is M x N with ldc = N ---- */
typedef struct {
  int ta, tb, is_double, by_columns;
  int64_t M, N, K, lda, ldb, block;
  double alpha, beta;
  const char *A, *B;
  char *C;
} gemm_t;

static void gemm_block(void *ctx, int64_t b) {
  const gemm_t *j = ctx;
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
    blas_d(101, ta, tb, M, N, j->K, j->alpha, (const double *)A, j->lda, (const double *)B,
           j->ldb, j->beta, (double *)C, ldc);
  else
    blas_s(101, ta, tb, M, N, j->K, (float)j->alpha, (const float *)A, j->lda,
           (const float *)B, j->ldb, (float)j->beta, (float *)C, ldc);
}

static void gemm(int is_double, int ta, int tb, int64_t M, int64_t N, int64_t K,
                 double alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
                 double beta, void *C) {
  int previous = threads_local ? threads_local(1) : 0;
  gemm_t j = {ta, tb, is_double, N >= M, M, N, K, lda, ldb, N, alpha, beta, A, B, C};
  int64_t nblocks = 1;
  if (n_workers > 0 && M * N * K >= PARALLEL_MIN) {
    int64_t extent = j.by_columns ? N : M;
    int64_t align = 16, most = (extent + align - 1) / align;
    int64_t want = (M * N * K) / BLOCK_MIN;          /* blocks of at least BLOCK_MIN */
    int64_t cap = BLOCKS_PER_THREAD * (n_workers + 1);
    nblocks = want < cap ? want : cap;
    if (nblocks > most) nblocks = most;
    if (nblocks < 1) nblocks = 1;
    j.block = ((extent + nblocks - 1) / nblocks + align - 1) / align * align;
    nblocks = (extent + j.block - 1) / j.block;
  }
  if (nblocks <= 1) {
    j.by_columns = 1; j.block = N;
    gemm_block(&j, 0);
  } else {
    kiln_rt_parallel(gemm_block, &j, nblocks);
  }
  if (threads_local) threads_local(previous);
}

void kiln_rt_sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                   const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                   float *C) {
  gemm(0, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C);
}

void kiln_rt_dgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                   const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                   double *C) {
  gemm(1, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C);
}

#include "packed.c"
