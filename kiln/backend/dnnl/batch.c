/* Convolutions and poolings whose batch is a run-time size (generated C with run-time
   sizes: kiln/backend/c/heavy.py, csrc/sized_dnnl.h). A call site keeps the op's arguments
   with the batch left open and one op per batch size its calls bring, made on first use
   and kept; past KD_BATCH_OPS sizes the oldest op is freed (a call site's calls come one
   at a time: the program's lock). library.py compiles this file after shim.c and pool.c. */
#define KD_BATCH_OPS 32

typedef struct {
  int conv, which, alg, nsp, flags, next;
  int64_t groups, xd[5], wd[5], yd[5], kernel[3], stride[3], dilation[3], lo[3], hi[3];
  int64_t batch[KD_BATCH_OPS];
  kd_op *ops[KD_BATCH_OPS];
} kd_batch;

static kd_batch *kd_batch_alloc(int nsp, const int64_t *xd, const int64_t *yd,
                                const int64_t *stride, const int64_t *lo, const int64_t *hi) {
  if (!kd_spatial_ok(nsp)) return 0;
  kd_batch *b = calloc(1, sizeof *b);
  if (!b) return 0;
  b->nsp = nsp;
  for (int i = 0; i < nsp + 2; i++) { b->xd[i] = xd[i]; b->yd[i] = yd[i]; }
  for (int i = 0; i < nsp; i++) { b->stride[i] = stride[i]; b->lo[i] = lo[i]; b->hi[i] = hi[i]; }
  for (int i = 0; i < KD_BATCH_OPS; i++) b->batch[i] = -1;
  return b;
}

/* kd_conv's arguments, the batch (xd[0], yd[0]) left open */
kd_batch *kd_conv_batch_new(int which, int nsp, const int64_t *xd, const int64_t *wd,
                            const int64_t *yd, const int64_t *stride, const int64_t *dilation,
                            const int64_t *lo, const int64_t *hi, int64_t groups, int flags) {
  kd_batch *b = kd_batch_alloc(nsp, xd, yd, stride, lo, hi);
  if (!b) return 0;
  b->conv = 1; b->which = which; b->groups = groups; b->flags = flags;
  for (int i = 0; i < nsp + 2; i++) b->wd[i] = wd[i];
  for (int i = 0; i < nsp; i++) b->dilation[i] = dilation[i];
  return b;
}

/* kd_pool's arguments, the batch left open */
kd_batch *kd_pool_batch_new(int which, int alg, int nsp, const int64_t *xd, const int64_t *yd,
                            const int64_t *kernel, const int64_t *stride, const int64_t *lo,
                            const int64_t *hi, int flags) {
  kd_batch *b = kd_batch_alloc(nsp, xd, yd, stride, lo, hi);
  if (!b) return 0;
  b->which = which; b->alg = alg; b->flags = flags;
  for (int i = 0; i < nsp; i++) b->kernel[i] = kernel[i];
  return b;
}

/* The op for `n` images, or 0 with kd_error's message. */
kd_op *kd_batch_op(kd_batch *b, int64_t n) {
  for (int i = 0; i < KD_BATCH_OPS; i++) if (b->batch[i] == n) return b->ops[i];
  int64_t xd[5], yd[5];
  for (int i = 0; i < b->nsp + 2; i++) { xd[i] = b->xd[i]; yd[i] = b->yd[i]; }
  xd[0] = yd[0] = n;
  kd_op *op = b->conv
      ? kd_conv(b->which, b->nsp, xd, b->wd, yd, b->stride, b->dilation, b->lo, b->hi,
                b->groups, b->flags)
      : kd_pool(b->which, b->alg, b->nsp, xd, yd, b->kernel, b->stride, b->lo, b->hi,
                b->flags);
  if (!op) return 0;
  int k = b->next;
  b->next = (k + 1) % KD_BATCH_OPS;
  if (b->ops[k]) kd_free(b->ops[k]);
  b->ops[k] = op;
  b->batch[k] = n;
  return op;
}

void kd_batch_free(kd_batch *b) {
  if (!b) return;
  for (int i = 0; i < KD_BATCH_OPS; i++) if (b->ops[i]) kd_free(b->ops[i]);
  free(b);
}
