/* Weights packed once for MKL and reused while nothing wrote them (kiln_rt_sgemm_cached;
   packed.py explains when that pays). Included at the end of runtime.c, whose pool, gemm
   and BLAS pointers it uses; packed.py defines PACK_MIN_ROWS, PACK_MAX_ROWS,
   PACK_MIN_BLOCK_COLUMNS, PACK_BLOCKS_PER_THREAD and PACK_BUDGET. */
typedef size_t (*pack_size_t)(int, bint, bint, bint);
typedef void (*pack_t)(int, int, int, bint, bint, bint, float, const float *, bint, float *);
typedef void (*compute_t)(int, bint, bint, bint, bint, bint, const float *, bint,
                          const float *, bint, float, float *, bint);
static pack_size_t pack_size;
static pack_t pack_b;
static compute_t compute_packed;

_Atomic uint64_t kiln_rt_writes;        /* bumped by kiln on every write it can see */
static _Atomic int64_t packed_bytes;
static _Atomic int64_t packs_made;      /* times a cache was (re)packed: for tests */

int64_t kiln_rt_packs_made(void) { return atomic_load(&packs_made); }
void kiln_rt_note_write(void) { atomic_fetch_add(&kiln_rt_writes, 1); }

#define MAX_PACK_BLOCKS 32
typedef struct {
  const float *B;                 /* the weight and shape the packs were (or will be) made of */
  int64_t M, N, K, ldb;
  uint64_t writes;                /* kiln_rt_writes at the last call */
  int ready;                      /* packed[] holds B as it was at `writes` */
  int no_room;                    /* packing failed (memory or budget) at this count */
  int64_t block, nblocks;
  size_t bytes[MAX_PACK_BLOCKS];
  float *packed[MAX_PACK_BLOCKS];
} pack_cache_t;

void kiln_rt_pack_init(void *size, void *pack, void *compute) {
  pack_size = (pack_size_t)size; pack_b = (pack_t)pack; compute_packed = (compute_t)compute;
}

void *kiln_rt_pack_cache_new(void) { return calloc(1, sizeof(pack_cache_t)); }

static void release_block(pack_cache_t *c, int64_t b) {
  free(c->packed[b]);
  atomic_fetch_sub(&packed_bytes, (int64_t)c->bytes[b]);
  c->packed[b] = 0; c->bytes[b] = 0;
}

static void release_packs(pack_cache_t *c) {
  for (int b = 0; b < MAX_PACK_BLOCKS; b++) release_block(c, b);
  c->ready = 0;
}

void kiln_rt_pack_cache_free(void *cache) {
  if (!cache) return;
  release_packs(cache);
  free(cache);
}

/* one buffer per column block, sized for this shape; 0 when memory or budget runs out */
static int plan_packs(pack_cache_t *c) {
  int64_t threads = n_workers + 1, N = c->N;
  int64_t want = (N + PACK_BLOCKS_PER_THREAD * threads - 1) / (PACK_BLOCKS_PER_THREAD * threads);
  int64_t block = (want + 15) / 16 * 16;
  if (block < PACK_MIN_BLOCK_COLUMNS) block = PACK_MIN_BLOCK_COLUMNS;
  if ((N + block - 1) / block > MAX_PACK_BLOCKS)
    block = ((N + MAX_PACK_BLOCKS - 1) / MAX_PACK_BLOCKS + 15) / 16 * 16;
  c->block = block;
  c->nblocks = (N + block - 1) / block;
  for (int64_t b = 0; b < MAX_PACK_BLOCKS; b++) {
    int64_t cols = b < c->nblocks ? (b + 1 < c->nblocks ? block : N - b * block) : 0;
    size_t need = cols ? pack_size(162 /* CblasBMatrix */, c->M, cols, c->K) : 0;
    if (need == c->bytes[b]) continue;
    release_block(c, b);
    if (!need) continue;
    if (atomic_fetch_add(&packed_bytes, (int64_t)need) + (int64_t)need > PACK_BUDGET) {
      atomic_fetch_sub(&packed_bytes, (int64_t)need);
      release_packs(c);
      return 0;
    }
    c->packed[b] = malloc(need);
    c->bytes[b] = need;
    if (!c->packed[b]) { release_packs(c); return 0; }
  }
  return 1;
}

typedef struct { pack_cache_t *c; const float *A; int64_t lda; float beta; float *C; int pack; }
  packed_job_t;

static void packed_block(void *ctx, int64_t b) {
  const packed_job_t *j = ctx;
  pack_cache_t *c = j->c;
  int64_t lo = b * c->block, cols = b + 1 < c->nblocks ? c->block : c->N - lo;
  if (j->pack)
    pack_b(101, 162, 112, c->M, cols, c->K, 1.0f, c->B + lo * c->ldb, c->ldb, c->packed[b]);
  compute_packed(101, 111, 151 /* CblasPacked */, c->M, cols, c->K, j->A, j->lda,
                 c->packed[b], c->ldb, j->beta, j->C + lo, c->N);
}

/* C = alpha op(A) op(B) + beta C like kiln_rt_sgemm, for a B that is a program's parameter:
   through packs of B kept in `cache` when that pays and is safe (see packed.py) */
void kiln_rt_sgemm_cached(void *cache, int ta, int tb, int64_t M, int64_t N, int64_t K,
                          float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                          float beta, float *C) {
  pack_cache_t *c = cache;
  if (!c || !pack_b || ta || !tb || alpha != 1.0f || M < PACK_MIN_ROWS || M > PACK_MAX_ROWS
      || N < PACK_MIN_BLOCK_COLUMNS) {
    gemm(0, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C);
    return;
  }
  uint64_t writes = atomic_load(&kiln_rt_writes);
  if (c->writes != writes || c->B != B || c->M != M || c->N != N || c->K != K
      || c->ldb != ldb) {
    /* something may have changed: this call goes unpacked, the next one may pack; the
       old packs go now, so a cache that is not in use holds no memory */
    release_packs(c);
    c->no_room = 0;
    c->writes = writes; c->B = B; c->M = M; c->N = N; c->K = K; c->ldb = ldb;
    gemm(0, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C);
    return;
  }
  if (!c->ready && (c->no_room || !plan_packs(c))) {
    c->no_room = 1;           /* not tried again until something changes */
    gemm(0, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C);
    return;
  }
  int previous = threads_local ? threads_local(1) : 0;
  packed_job_t j = {c, A, lda, beta, C, !c->ready};
  if (j.pack) atomic_fetch_add(&packs_made, 1);
  kiln_rt_parallel(packed_block, &j, c->nblocks);
  c->ready = 1;
  if (threads_local) threads_local(previous);
}
