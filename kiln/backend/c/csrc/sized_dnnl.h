/* oneDNN calls of run-time sizes (sizes.py): a program with any puts this file where
   heavy.h would go, after defining the KILN_GRID_* constants (dnnl_dense.grid_defines).

   A Dense layer whose row count is a run-time size (dnnl_dense.py, sized_dense): the grid
   of blocks a layer of fixed size gets (dnnl_dense.grid), worked out per call, and each
   block's op from its call site's cache in the shim (kd_matmul_rows_op, set by
   kiln_set_dnnl_rows). A convolution or pooling of run-time batch (heavy.py): its op for
   the call's batch from its call site's cache (kd_batch_op, set by kiln_set_dnnl_batch). A
   batched matmul of run-time sizes: one op for the call's sizes from its call site's cache
   (kd_bmm_op, set by kiln_set_dnnl_bmm). */
#include "heavy.h"

typedef void *(*kiln_batch_op_t)(void *, int64_t);
static kiln_batch_op_t kiln_batch_op = 0;
void kiln_set_dnnl_batch(void *op) { kiln_batch_op = (kiln_batch_op_t)op; }

typedef void *(*kiln_rows_op_t)(void *, int64_t, int64_t, int64_t, int, int);
static kiln_rows_op_t kiln_rows_op = 0;
void kiln_set_dnnl_rows(void *op) { kiln_rows_op = (kiln_rows_op_t)op; }

#define KILN_ROWS_MAX_BLOCKS (2 * KILN_GRID_THREADS * KILN_GRID_ROW_BLOCKS + 2)

typedef struct {
  void **ops;
  const float *a, *b, *bias;
  float *c;
  int64_t rows, cols, across, a_row, b_col, ldc, stamp;
  int failed;
} kiln_rows_job;

static void kiln_rows_block(void *ctx, int64_t blk) {
  kiln_rows_job *j = ctx;
  int64_t m0 = blk / j->across * j->rows, n0 = blk % j->across * j->cols;
  void *p[4] = {(void *)(j->a + m0 * j->a_row), (void *)(j->b + n0 * j->b_col), 0, 0};
  int64_t s[4] = {0, j->stamp, 0, 0};
  if (j->bias) { p[2] = (void *)(j->bias + n0); p[3] = j->c + m0 * j->ldc + n0; }
  else p[2] = j->c + m0 * j->ldc + n0;
  if (kiln_dnnl_run(j->ops[blk], p, s) != 0)
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

static int64_t kiln_ceil_to(int64_t x, int64_t k) { return (x + k - 1) / k * k; }

/* c (M x N, rows ldc apart) = act(a . b + bias) over oneDNN's blocks: 0 when done, 1 when
   some block has no op (the caller runs kiln's gemm instead), -1 when oneDNN failed.
   a: rows a_row elements apart; b: columns b_col apart; pack: the weight stays between
   calls (its packed copy may be kept, when one block holds every row); pool: kiln's
   thread pool, or 0. */
typedef void (*kiln_rows_pool_t)(void (*)(void *, int64_t), void *, int64_t);

static int kiln_dense_rows(void *cache, int64_t M, int64_t N, const float *a, int64_t a_row,
                           const float *b, int64_t b_col, const float *bias, float *c,
                           int64_t ldc, int pack, kiln_rows_pool_t pool) {
  int64_t rows = M, cols = N;
  if (KILN_GRID_THREADS > 1 && M >= KILN_GRID_ROW_SPLIT_MIN) {
    int64_t r = (M + KILN_GRID_ROW_BLOCKS * KILN_GRID_THREADS - 1)
                / (KILN_GRID_ROW_BLOCKS * KILN_GRID_THREADS);
    rows = kiln_ceil_to(r, 8);
    if (rows < KILN_GRID_MIN_ROWS) rows = KILN_GRID_MIN_ROWS;
  } else if (KILN_GRID_THREADS > 1) {
    cols = kiln_ceil_to((N + KILN_GRID_THREADS - 1) / KILN_GRID_THREADS, 16);
    if (cols < KILN_GRID_MIN_COLUMNS) cols = KILN_GRID_MIN_COLUMNS;
  }
  int64_t down = (M + rows - 1) / rows, across = (N + cols - 1) / cols, n = down * across;
  if (!kiln_rows_op || n > KILN_ROWS_MAX_BLOCKS) return 1;
  void *ops[KILN_ROWS_MAX_BLOCKS];
  int single = n > 1, packed = pack && rows >= M;
  for (int64_t blk = 0; blk < n; blk++) {
    int64_t m0 = blk / across * rows, n0 = blk % across * cols;
    int64_t mb = M - m0 < rows ? M - m0 : rows, nb = N - n0 < cols ? N - n0 : cols;
    ops[blk] = kiln_rows_op(cache, mb, nb, blk, single, packed);
    if (!ops[blk]) return 1;
  }
  kiln_rows_job job = {ops, a, b, bias, c, rows, cols, across, a_row, b_col, ldc,
                       packed ? kiln_weight_stamp() : 0, 0};
  if (n == 1) kiln_rows_block(&job, 0);
  else if (pool) pool(kiln_rows_block, &job, n);
  else for (int64_t blk = 0; blk < n; blk++) kiln_rows_block(&job, blk);
  return job.failed ? -1 : 0;
}

typedef void *(*kiln_bmm_op_t)(void *, int64_t, int64_t, int64_t, int64_t, int64_t);
static kiln_bmm_op_t kiln_bmm_op = 0;
void kiln_set_dnnl_bmm(void *op) { kiln_bmm_op = (kiln_bmm_op_t)op; }

/* c (max(ba, bb) matrices of M x N) = a (ba of M x K) . b (bb of K x N), all contiguous, as
   one oneDNN op: 0 when done, 1 when there is no op for these sizes (the caller runs kiln's
   loop; also for no elements), -1 when oneDNN failed. */
static int kiln_dense_batched(void *cache, int64_t ba, int64_t bb, int64_t M, int64_t K,
                              int64_t N, const float *a, const float *b, float *c) {
  if (!kiln_bmm_op || ba == 0 || bb == 0 || M == 0 || K == 0 || N == 0) return 1;
  void *op = kiln_bmm_op(cache, ba, bb, M, K, N);
  if (!op) return 1;
  void *p[3] = {(void *)a, (void *)b, c};
  int64_t s[3] = {0, 0, 0};
  return kiln_dnnl_run(op, p, s) != 0 ? -1 : 0;
}
