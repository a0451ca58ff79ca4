/* Dense layers and batched matmuls on oneDNN's matmul primitive (see kiln/backend/c/dnnl_dense.py).

   library.py compiles this file after shim.c as one library, so an op here is a shim op
   (kd_make, kd_run, kd_free): the weight is reordered into oneDNN's packed layout once and
   kept while the caller's pointer and stamp are unchanged. Bias and ReLU run inside the
   primitive (bias argument, eltwise post-op), so the layer is one pass over its output. */


static dnnl_memory_desc_t kd_strided(int nd, const int64_t *dims, const int64_t *strides) {
  dnnl_dims_t d, s;
  for (int i = 0; i < nd; i++) { d[i] = dims[i]; s[i] = strides[i]; }
  dnnl_memory_desc_t md = 0;
  if (dnnl_memory_desc_create_with_strides(&md, nd, d, dnnl_f32, s) != dnnl_success) return 0;
  return md;
}

/* A matmul's epilogue as oneDNN post-ops on attr, in this order: y * scale (when not 1),
   the activation (KD_ACT_*), + a second tensor of y's size described by add (when given:
   a binary post-op: its argument is DNNL_ARG_ATTR_MULTIPLE_POST_OP(the number of post-ops
   before it) | DNNL_ARG_SRC_1). Shared by the float32 matmuls here and the low-precision
   ones (lowp.c). 0, or -1 with kd_message set. */
enum { KD_ACT_NONE = 0, KD_ACT_RELU = 1, KD_ACT_GELU = 2 };

static int kd_matmul_epilogue(dnnl_primitive_attr_t attr, int act, float scale,
                              const_dnnl_memory_desc_t add) {
  dnnl_post_ops_t po = 0;
  if (act == KD_ACT_NONE && scale == 1.0f && !add) return 0;
  KD_TRY(dnnl_post_ops_create(&po));
  if (scale != 1.0f) KD_TRY(dnnl_post_ops_append_eltwise(po, dnnl_eltwise_linear, scale, 0.0f));
  if (act == KD_ACT_RELU) KD_TRY(dnnl_post_ops_append_eltwise(po, dnnl_eltwise_relu, 0.0f, 0.0f));
  if (act == KD_ACT_GELU)
    KD_TRY(dnnl_post_ops_append_eltwise(po, dnnl_eltwise_gelu_erf, 0.0f, 0.0f));
  if (add) KD_TRY(dnnl_post_ops_append_binary(po, dnnl_binary_add, add));
  KD_TRY(dnnl_primitive_attr_set_post_ops(attr, po));
  dnnl_post_ops_destroy(po);
  return 0;
fail:
  if (po) dnnl_post_ops_destroy(po);
  return -1;
}

/* 0 when pd has a real kernel (named in kd_impl); -1 with kd_message naming `what` when
   oneDNN has only its reference kernel: slower than kiln's own loops or NumPy. */
static int kd_real_kernel(const_dnnl_primitive_desc_t pd, const char *what) {
  const char *impl = 0;
  KD_TRY(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
  snprintf(kd_impl, sizeof kd_impl, "%s", impl ? impl : "");
  if (impl && strncmp(impl, "ref", 3)) return 0;
  snprintf(kd_message, sizeof kd_message, "%s: only oneDNN's reference kernel (%s)", what,
           kd_impl);
fail:
  return -1;
}

/* y = act(a . b + bias) over nd = 2 or 3 dims (a batch dim first: 1 in a or b broadcasts).
   a: (.., M, K), b: (.., K, N), each with its own element strides (a transpose read in
   place is just other strides); y: (batch, M, N) with rows ldc apart (a block of columns
   of a wider output), batches M * ldc; bias: plain (N). act: 0 none, 1 ReLU. pack: let
   oneDNN choose b's layout (a reorder, kept between calls by the stamp) instead of
   reading b as it lies. ldr: 0, or the residual's row stride: y += a tensor of y's dims
   (a binary post-op after the activation: an LSTM step's input projection, a residual
   connection), read with rows ldr apart; it is the argument after y. Fails (0, kd_error)
   on a reference implementation: slower than kiln's own loops, so the caller keeps those. */
static kd_op *kd_matmul_make(int nd, const int64_t *ad, const int64_t *as,
                             const int64_t *bd, const int64_t *bs, int64_t ldc, int bias,
                             int act, int pack, int64_t ldr) {
  int64_t yd[3], ys[3], rs[3], biasd[3] = {1, 1, 1};
  for (int i = 0; i < nd - 2; i++) yd[i] = ad[i] > bd[i] ? ad[i] : bd[i];
  yd[nd - 2] = ad[nd - 2]; yd[nd - 1] = bd[nd - 1]; biasd[nd - 1] = bd[nd - 1];
  ys[nd - 1] = 1; ys[nd - 2] = ldc; if (nd == 3) ys[0] = ldc * yd[1];
  rs[nd - 1] = 1; rs[nd - 2] = ldr; if (nd == 3) rs[0] = ldr * yd[1];
  dnnl_memory_desc_t am = kd_strided(nd, ad, as), ym = kd_strided(nd, yd, ys);
  dnnl_memory_desc_t bm = pack ? kd_any(nd, bd) : kd_strided(nd, bd, bs);
  dnnl_memory_desc_t biasm = bias ? kd_plain(nd, biasd) : 0;
  dnnl_memory_desc_t resm = ldr ? kd_strided(nd, yd, rs) : 0;
  dnnl_primitive_attr_t attr = kd_attr();
  dnnl_primitive_desc_t pd = 0;
  dnnl_memory_desc_t user[KD_MAX_ARGS] = {0};
  int args[KD_MAX_ARGS], outs[KD_MAX_ARGS] = {0}, nargs = 0;
  if (kd_init()) goto fail;
  if (!am || !ym || !bm || !attr || (bias && !biasm) || (ldr && !resm)) {
    snprintf(kd_message, sizeof kd_message, "matmul: bad dims or strides");
    goto fail;
  }
  if (kd_matmul_epilogue(attr, act ? KD_ACT_RELU : KD_ACT_NONE, 1.0f, resm)) goto fail;
  KD_TRY(dnnl_matmul_primitive_desc_create(&pd, kd_engine, am, bm, biasm, ym, attr));
  if (kd_real_kernel(pd, "matmul")) goto fail;
  args[0] = DNNL_ARG_SRC; user[0] = kd_strided(nd, ad, as);
  args[1] = DNNL_ARG_WEIGHTS; user[1] = kd_strided(nd, bd, bs);
  nargs = 2;
  if (bias) { args[2] = DNNL_ARG_BIAS; user[2] = kd_plain(nd, biasd); nargs = 3; }
  args[nargs] = DNNL_ARG_DST; outs[nargs] = 1; user[nargs] = kd_strided(nd, yd, ys); nargs++;
  if (ldr) {       /* the binary add is the epilogue's last post-op */
    args[nargs] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(act != KD_ACT_NONE) | DNNL_ARG_SRC_1;
    user[nargs] = kd_strided(nd, yd, rs); nargs++;
  }
  dnnl_memory_desc_destroy(am); dnnl_memory_desc_destroy(bm); dnnl_memory_desc_destroy(ym);
  if (biasm) dnnl_memory_desc_destroy(biasm);
  if (resm) dnnl_memory_desc_destroy(resm);
  dnnl_primitive_attr_destroy(attr);
  return kd_make(pd, nargs, args, outs, user);
fail:
  if (am) dnnl_memory_desc_destroy(am);
  if (bm) dnnl_memory_desc_destroy(bm);
  if (ym) dnnl_memory_desc_destroy(ym);
  if (biasm) dnnl_memory_desc_destroy(biasm);
  if (resm) dnnl_memory_desc_destroy(resm);
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (pd) dnnl_primitive_desc_destroy(pd);
  for (int i = 0; i < KD_MAX_ARGS; i++) if (user[i]) dnnl_memory_desc_destroy(user[i]);
  return 0;
}

/* single: make the op for one thread. oneDNN fixes an op's thread count when it makes it
   and runs a one-thread op inline, without OpenMP, so kiln's pool can run several such ops
   (blocks of one layer) at once, each on the thread that takes it. */
kd_op *kd_matmul(int nd, const int64_t *ad, const int64_t *as, const int64_t *bd,
                 const int64_t *bs, int64_t ldc, int bias, int act, int pack, int single,
                 int64_t ldr) {
  if (nd < 2 || nd > 3) {
    snprintf(kd_message, sizeof kd_message, "matmul over %d dims (2 or 3 taken)", nd);
    return 0;
  }
  int before = omp_get_max_threads();
  if (single) omp_set_num_threads(1); else kd_enter();
  kd_op *op = kd_matmul_make(nd, ad, as, bd, bs, ldc, bias, act, pack, ldr);
  if (op && single) op->threads = 1;
  omp_set_num_threads(before);
  return op;
}

/* The ops of one Dense layer whose row count is known only when it runs (generated C with
   run-time sizes: kiln/backend/c/csrc/sized_dnnl.h). A call splits its rows and columns
   into blocks as a layer of fixed size would be split, and asks here for each block's op:
   one per block shape and position (ops run one call at a time, and the blocks of a call
   run at once), made on first use and kept. A call site keeps at most KD_ROW_OPS; past
   them, and where oneDNN has only its reference kernel, there is no op (0) and the caller
   runs kiln's own gemm. */
#define KD_ROW_OPS 64

typedef struct {
  int64_t rows, cols, block;
  int single, pack;
  kd_op *op;
} kd_rows_entry;

typedef struct {
  pthread_mutex_t lock;
  int64_t K, as[2], bs[2], ldc;
  int bias, act, n;
  kd_rows_entry ops[KD_ROW_OPS];
} kd_rows;

/* a: (rows, K) read with element strides as; b: (K, cols) with strides bs; the output's
   rows ldc apart; bias, act: as kd_matmul's */
kd_rows *kd_matmul_rows_new(int64_t K, const int64_t *as, const int64_t *bs, int64_t ldc,
                            int bias, int act) {
  kd_rows *r = calloc(1, sizeof *r);
  if (!r) return 0;
  pthread_mutex_init(&r->lock, 0);
  r->K = K; r->ldc = ldc; r->bias = bias; r->act = act;
  r->as[0] = as[0]; r->as[1] = as[1]; r->bs[0] = bs[0]; r->bs[1] = bs[1];
  return r;
}

/* The op for block `block` of `rows` x `cols` outputs, or 0 (kiln's gemm runs it). */
kd_op *kd_matmul_rows_op(kd_rows *r, int64_t rows, int64_t cols, int64_t block, int single,
                         int pack) {
  kd_op *op = 0;
  pthread_mutex_lock(&r->lock);
  for (int i = 0; i < r->n; i++) {
    kd_rows_entry *e = &r->ops[i];
    if (e->rows == rows && e->cols == cols && e->block == block && e->single == single
        && e->pack == pack) {
      op = e->op;
      goto done;
    }
  }
  if (r->n < KD_ROW_OPS) {
    int64_t ad[2] = {rows, r->K}, bd[2] = {r->K, cols};
    op = kd_matmul(2, ad, r->as, bd, r->bs, r->ldc, r->bias, r->act, pack, single, 0);
    kd_rows_entry e = {rows, cols, block, single, pack, op};
    r->ops[r->n++] = e;     /* a failed make too: it is not tried again */
  }
done:
  pthread_mutex_unlock(&r->lock);
  return op;
}

void kd_matmul_rows_free(kd_rows *r) {
  if (!r) return;
  for (int i = 0; i < r->n; i++) if (r->ops[i].op) kd_free(r->ops[i].op);
  pthread_mutex_destroy(&r->lock);
  free(r);
}

/* The ops of one batched matmul whose sizes are known only when it runs (attention's
   scores and values written out, in generated C with run-time sizes): one op per
   (matrices of a, of b, M, K, N), a and b contiguous (one of them may be a single matrix,
   broadcast), made on first use and kept, at most KD_ROW_OPS per call site; past them,
   and on oneDNN's reference kernel, no op (0): the caller runs kiln's own loop. */
typedef struct {
  int64_t key[5];
  kd_op *op;
} kd_bmm_entry;

typedef struct {
  pthread_mutex_t lock;
  int n;
  kd_bmm_entry ops[KD_ROW_OPS];
} kd_bmm;

kd_bmm *kd_bmm_new(void) {
  kd_bmm *c = calloc(1, sizeof *c);
  if (c) pthread_mutex_init(&c->lock, 0);
  return c;
}

kd_op *kd_bmm_op(kd_bmm *c, int64_t ba, int64_t bb, int64_t M, int64_t K, int64_t N) {
  int64_t key[5] = {ba, bb, M, K, N};
  kd_op *op = 0;
  pthread_mutex_lock(&c->lock);
  for (int i = 0; i < c->n; i++)
    if (!memcmp(c->ops[i].key, key, sizeof key)) { op = c->ops[i].op; goto done; }
  if (c->n < KD_ROW_OPS) {
    int64_t ad[3] = {ba, M, K}, as[3] = {M * K, K, 1}, bd[3] = {bb, K, N},
            bs[3] = {K * N, N, 1};
    op = kd_matmul(3, ad, as, bd, bs, N, 0, 0, 0, 0, 0);
    kd_bmm_entry e = {{ba, bb, M, K, N}, op};
    c->ops[c->n++] = e;     /* a failed make too: it is not tried again */
  }
done:
  pthread_mutex_unlock(&c->lock);
  return op;
}

void kd_bmm_free(kd_bmm *c) {
  if (!c) return;
  for (int i = 0; i < c->n; i++) if (c->ops[i].op) kd_free(c->ops[i].op);
  pthread_mutex_destroy(&c->lock);
  free(c);
}
