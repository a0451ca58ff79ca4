/* Layer normalization and the softmax family over the last axis (kiln/ops/normalization.py),
   one row at a time: a row (a few KB) is read from memory once and its later passes read
   it from L1. normalization.py puts this file in a program that has one of the ops and
   runs blocks of rows as tasks on the runtime's pool.

   Each row is computed the way the composite's C computes it (kernels.py's reductions,
   elementwise.py's expressions): sums accumulate in double and round to T once, the mean
   and variance divide by n in T, the output divides by sqrt(var + eps); max propagates
   NaN; exp and log are vector_math.h's. So a NaN or inf in a row makes that row NaN as
   the composite does, and only the order of the summation differs (the loops here are
   vectorized: `omp simd` reductions). */

#include <stdint.h>
#include <math.h>

#define KILN_NORMALIZATION(T, EXP, LOG)                                                     \
typedef struct {                                                                           \
  const T *x, *gamma, *beta; T *out;                                                       \
  int64_t rows, n, per_task;                                                               \
  int64_t gamma_step, beta_step;   /* 0 for a scalar gamma or beta, else 1 */              \
  T eps;                                                                                   \
} kiln_layer_norm_##T;                                                                     \
                                                                                           \
static void kiln_layer_norm_task_##T(void *ctx, int64_t task) {                            \
  const kiln_layer_norm_##T *a = ctx;                                                      \
  const int64_t n = a->n, gs = a->gamma_step, bs = a->beta_step;                           \
  const int64_t r1 = (task + 1) * a->per_task < a->rows ? (task + 1) * a->per_task : a->rows; \
  for (int64_t r = task * a->per_task; r < r1; r++) {                                      \
    const T *x = a->x + r * n;                                                             \
    T *out = a->out + r * n;                                                               \
    double total = 0;                                                                      \
    _Pragma("omp simd reduction(+:total)")                                                 \
    for (int64_t j = 0; j < n; j++) total += (double)x[j];                                 \
    const T mean = (T)total / (T)n;                                                        \
    double squares = 0;                                                                    \
    _Pragma("omp simd reduction(+:squares)")                                               \
    for (int64_t j = 0; j < n; j++) {                                                      \
      const T d = x[j] - mean;                                                             \
      squares += (double)(T)(d * d);                                                       \
    }                                                                                      \
    const T std = (T)sqrt((double)((T)((T)squares / (T)n + a->eps)));                      \
    const T *g = a->gamma, *b = a->beta;                                                   \
    if (gs && bs) {            /* vectors: the loop the layers run, kept unit-stride */    \
      _Pragma("omp simd")                                                                  \
      for (int64_t j = 0; j < n; j++) out[j] = (x[j] - mean) / std * g[j] + b[j];          \
    } else {                                                                               \
      for (int64_t j = 0; j < n; j++) out[j] = (x[j] - mean) / std * g[j * gs] + b[j * bs]; \
    }                                                                                      \
  }                                                                                        \
}                                                                                          \
                                                                                           \
typedef struct {                                                                           \
  const T *x; T *out;                                                                      \
  int64_t rows, n, per_task;                                                               \
  int log;                                                                                 \
} kiln_softmax_##T;                                                                        \
                                                                                           \
static void kiln_softmax_task_##T(void *ctx, int64_t task) {                               \
  const kiln_softmax_##T *a = ctx;                                                         \
  const int64_t n = a->n;                                                                  \
  const int64_t r1 = (task + 1) * a->per_task < a->rows ? (task + 1) * a->per_task : a->rows; \
  for (int64_t r = task * a->per_task; r < r1; r++) {                                      \
    const T *x = a->x + r * n;                                                             \
    T *out = a->out + r * n;                                                               \
    T top = -INFINITY;                                                                     \
    int nan = 0;                                                                           \
    _Pragma("omp simd reduction(max:top) reduction(|:nan)")                                \
    for (int64_t j = 0; j < n; j++) {                                                      \
      top = x[j] > top ? x[j] : top;                                                       \
      nan |= x[j] != x[j];                                                                 \
    }                                                                                      \
    if (nan) top = NAN;                                                                    \
    double total = 0;                                                                      \
    if (a->log) {                                                                          \
      _Pragma("omp simd reduction(+:total)")                                               \
      for (int64_t j = 0; j < n; j++) total += (double)EXP(x[j] - top);                    \
      const T lse = LOG((T)total);                                                         \
      _Pragma("omp simd")                                                                  \
      for (int64_t j = 0; j < n; j++) out[j] = (x[j] - top) - lse;                         \
    } else {                                                                               \
      _Pragma("omp simd reduction(+:total)")                                               \
      for (int64_t j = 0; j < n; j++) {                                                    \
        const T e = EXP(x[j] - top);                                                       \
        out[j] = e;                                                                        \
        total += (double)e;                                                                \
      }                                                                                    \
      const T t = (T)total;                                                                \
      _Pragma("omp simd")                                                                  \
      for (int64_t j = 0; j < n; j++) out[j] = out[j] / t;                                 \
    }                                                                                      \
  }                                                                                        \
}

KILN_NORMALIZATION(float, kiln_vm_exp_f, kiln_vm_log_f)
KILN_NORMALIZATION(double, kiln_vm_exp, kiln_vm_log)
