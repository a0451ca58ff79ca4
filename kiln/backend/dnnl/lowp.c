/* Low-precision matmuls on oneDNN's matmul primitive (kiln/backend/dnnl/lowp.py):
   bfloat16 (AMP) and int8 (quantization).

   library.py compiles this file after shim.c as one library, so an op here is a shim op
   (kd_make, kd_run, kd_free). y (N last) = act(a . b * scale[n] + bias), accumulated in
   float32 (bfloat16) or int32 (int8), over nd = 2 or 3 dims (a batch dim first: 1 in a or
   b broadcasts); a and b with their own element strides (a transpose read in place is
   just other strides), y, bias and scale plain.

   bfloat16: the caller's a and b are float32 and the primitive reads bfloat16; the op's
   reorders round them (to nearest even) on the way in: a on every call (kept in its own
   memory order: a transposed a is read transposed by the kernel, not transposed by the
   reorder), b (a weight, passed with a stamp) once. y is float32, written by the primitive itself: no pass over
   it to widen a bfloat16 result.
   int8: the caller gives a quantized (s8 or u8) and b quantized per output column (s8);
   scale[n] (float32, N values, a runtime argument) carries a's scale times b's column
   scale, divided by y's scale when y is int8 (requantized, saturated), and so does the
   bias. ReLU commutes with the positive scales, so it runs as the post-op it is. */

enum { KD_F32 = 0, KD_BF16 = 1, KD_S8 = 2, KD_U8 = 3 };

static dnnl_data_type_t kd_lowp_type(int code) {
  switch (code) {
    case KD_BF16: return dnnl_bf16;
    case KD_S8: return dnnl_s8;
    case KD_U8: return dnnl_u8;
    default: return dnnl_f32;
  }
}

static dnnl_memory_desc_t kd_lowp_plain(int nd, const int64_t *dims, dnnl_data_type_t dt) {
  dnnl_dims_t d, s;
  int64_t stride = 1;
  for (int i = nd - 1; i >= 0; i--) { d[i] = dims[i]; s[i] = stride; stride *= dims[i]; }
  dnnl_memory_desc_t md = 0;
  if (dnnl_memory_desc_create_with_strides(&md, nd, d, dt, s) != dnnl_success) return 0;
  return md;
}

static dnnl_memory_desc_t kd_lowp_strided(int nd, const int64_t *dims, const int64_t *strides,
                                          dnnl_data_type_t dt) {
  dnnl_dims_t d, s;
  for (int i = 0; i < nd; i++) { d[i] = dims[i]; s[i] = strides[i]; }
  dnnl_memory_desc_t md = 0;
  if (dnnl_memory_desc_create_with_strides(&md, nd, d, dt, s) != dnnl_success) return 0;
  return md;
}

/* dims of type dt stored in the order the element strides give when they are a dense
   permutation (a transposed matrix: bfloat16 a read where it lies, as oneDNN's brgemm
   matmul takes it, after a reorder that only narrows: no transposing reorder, which is
   several times slower), else plain. */
static dnnl_memory_desc_t kd_lowp_like(int nd, const int64_t *dims, const int64_t *strides,
                                       dnnl_data_type_t dt) {
  int64_t dense[DNNL_MAX_NDIMS];
  int order[DNNL_MAX_NDIMS];
  for (int i = 0; i < nd; i++) order[i] = i;
  for (int i = 1; i < nd; i++)      /* innermost first: by stride, ties by position */
    for (int j = i; j > 0 && (strides[order[j]] < strides[order[j - 1]] ||
                              (strides[order[j]] == strides[order[j - 1]] &&
                               order[j] > order[j - 1])); j--) {
      int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
    }
  int64_t step = 1;
  for (int i = 0; i < nd; i++) {
    int d = order[i];
    if (dims[d] != 1 && strides[d] != step) return kd_lowp_plain(nd, dims, dt);
    dense[d] = step; step *= dims[d];
  }
  return kd_lowp_strided(nd, dims, dense, dt);
}

static dnnl_memory_desc_t kd_lowp_any(int nd, const int64_t *dims, dnnl_data_type_t dt) {
  dnnl_dims_t d;
  for (int i = 0; i < nd; i++) d[i] = dims[i];
  dnnl_memory_desc_t md = 0;
  if (dnnl_memory_desc_create_with_tag(&md, nd, d, dt, dnnl_format_tag_any) != dnnl_success)
    return 0;
  return md;
}

/* op with runtime scales appended as its last argument (int8; `which` DNNL_ARG_WEIGHTS
   or DNNL_ARG_DST): they have no memory descriptor in the primitive's (kd_make would
   compare one), so the caller's float32 (`scaled` values) is read as it lies. */
static kd_op *kd_lowp_with_scales(kd_op *op, int int8, const int64_t *scaled, int which) {
  if (!op || !int8) return op;
  kd_arg *s = &op->args[op->nargs];
  dnnl_memory_desc_t sm = kd_lowp_plain(1, scaled, dnnl_f32);
  s->arg = DNNL_ARG_ATTR_SCALES | which;
  if (!sm || dnnl_memory_create(&s->user, sm, kd_engine, DNNL_MEMORY_NONE) != dnnl_success) {
    snprintf(kd_message, sizeof kd_message, "int8 op: no memory for the scales");
    if (sm) dnnl_memory_desc_destroy(sm);
    kd_free(op);
    return 0;
  }
  dnnl_memory_desc_destroy(sm);
  op->nargs++;
  return op;
}

/* in_type: KD_BF16 (float32 a and b read as bfloat16), KD_S8 or KD_U8 (a's type; b s8).
   out_type: KD_F32, or KD_S8 / KD_U8 for an int8 input (requantized). The epilogue
   (matmul.c's kd_matmul_epilogue): y = act((a . b + bias) * scale) + residual, act a
   KD_ACT_* (the AMP pass's fusions: attention's 1/sqrt(d), Dense + GELU, a residual add),
   the residual a float32 of y's size. Arguments, in order: a, b, [bias], y, [residual],
   [scale (int8)]. Fails (0, kd_error) on a reference kernel. */
static kd_op *kd_matmul_lowp_make(int nd, const int64_t *ad, const int64_t *as,
                                  const int64_t *bd, const int64_t *bs, int in_type,
                                  int out_type, int bias, int act, float scale,
                                  int residual, int a_like) {
  int64_t yd[3], biasd[3] = {1, 1, 1}, scaled[1] = {bd[nd - 1]};
  for (int i = 0; i < nd - 2; i++) yd[i] = ad[i] > bd[i] ? ad[i] : bd[i];
  yd[nd - 2] = ad[nd - 2]; yd[nd - 1] = bd[nd - 1]; biasd[nd - 1] = bd[nd - 1];
  int int8 = in_type != KD_BF16;
  dnnl_data_type_t at = kd_lowp_type(in_type), bt = int8 ? dnnl_s8 : dnnl_bf16;
  dnnl_data_type_t yt = kd_lowp_type(out_type);
  dnnl_memory_desc_t am = (int8 || !a_like) ? kd_lowp_plain(nd, ad, at)
                                                 : kd_lowp_like(nd, ad, as, at);
  dnnl_memory_desc_t bm = kd_lowp_any(nd, bd, bt);
  dnnl_memory_desc_t ym = kd_lowp_plain(nd, yd, yt);
  dnnl_memory_desc_t biasm = bias ? kd_lowp_plain(nd, biasd, dnnl_f32) : 0;
  dnnl_memory_desc_t resm = residual ? kd_lowp_plain(nd, yd, dnnl_f32) : 0;
  dnnl_primitive_attr_t attr = kd_attr();
  dnnl_primitive_desc_t pd = 0;
  dnnl_memory_desc_t user[KD_MAX_ARGS] = {0};
  int args[KD_MAX_ARGS], outs[KD_MAX_ARGS] = {0}, nargs = 0;
  if (kd_init()) goto fail;
  if (!am || !bm || !ym || !attr || (bias && !biasm) || (residual && !resm)) {
    snprintf(kd_message, sizeof kd_message, "low-precision matmul: bad dims");
    goto fail;
  }
  if (int8) KD_TRY(dnnl_primitive_attr_set_scales_mask(attr, DNNL_ARG_WEIGHTS, 1 << (nd - 1)));
  if (kd_matmul_epilogue(attr, act, scale, resm)) goto fail;
  KD_TRY(dnnl_matmul_primitive_desc_create(&pd, kd_engine, am, bm, biasm, ym, attr));
  if (kd_real_kernel(pd, "low-precision matmul")) goto fail;
  /* the caller's float32 for bfloat16 (the reorders round), its own type for int8 */
  args[0] = DNNL_ARG_SRC; user[0] = kd_lowp_strided(nd, ad, as, int8 ? at : dnnl_f32);
  args[1] = DNNL_ARG_WEIGHTS; user[1] = kd_lowp_strided(nd, bd, bs, int8 ? dnnl_s8 : dnnl_f32);
  nargs = 2;
  if (bias) { args[nargs] = DNNL_ARG_BIAS; user[nargs] = kd_lowp_plain(nd, biasd, dnnl_f32); nargs++; }
  args[nargs] = DNNL_ARG_DST; outs[nargs] = 1; user[nargs] = kd_lowp_plain(nd, yd, yt); nargs++;
  if (residual) {   /* the binary add is the epilogue's last post-op */
    args[nargs] = DNNL_ARG_ATTR_MULTIPLE_POST_OP((scale != 1.0f) + (act != KD_ACT_NONE)) |
                  DNNL_ARG_SRC_1;
    user[nargs] = kd_lowp_plain(nd, yd, dnnl_f32); nargs++;
  }
  dnnl_memory_desc_destroy(am); dnnl_memory_desc_destroy(bm); dnnl_memory_desc_destroy(ym);
  if (biasm) dnnl_memory_desc_destroy(biasm);
  if (resm) dnnl_memory_desc_destroy(resm);
  dnnl_primitive_attr_destroy(attr);
  return kd_lowp_with_scales(kd_make(pd, nargs, args, outs, user), int8, scaled,
                             DNNL_ARG_WEIGHTS);
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

kd_op *kd_matmul_lowp(int nd, const int64_t *ad, const int64_t *as, const int64_t *bd,
                      const int64_t *bs, int in_type, int out_type, int bias, int act,
                      float scale, int residual) {
  if (nd < 2 || nd > 3) {
    snprintf(kd_message, sizeof kd_message, "low-precision matmul over %d dims (2 or 3)", nd);
    return 0;
  }
  int before = kd_enter();
  kd_op *op = kd_matmul_lowp_make(nd, ad, as, bd, bs, in_type, out_type, bias, act,
                                   scale, residual, 1);
  if (!op && in_type == KD_BF16)    /* a kernel that wants a plain a: a reorder transposes */
    op = kd_matmul_lowp_make(nd, ad, as, bd, bs, in_type, out_type, bias, act, scale,
                             residual, 0);
  kd_leave(before);
  return op;
}

/* An activation's descriptor (dims NCHW) of type dt, stored channels-last when cl. */
static dnnl_memory_desc_t kd_lowp_act(int nd, const int64_t *dims, dnnl_data_type_t dt,
                                      int cl) {
  if (!cl) return kd_lowp_plain(nd, dims, dt);
  int64_t s[DNNL_MAX_NDIMS], stride = dims[1];
  s[1] = 1;
  for (int i = nd - 1; i >= 2; i--) { s[i] = stride; stride *= dims[i]; }
  s[0] = stride;
  return kd_lowp_strided(nd, dims, s, dt);
}

/* y = requant(act(conv(x, w) * scale[f] + bias + residual)), forward inference,
   groups >= 1, dims given NCHW:
   bfloat16 (in_type KD_BF16: the caller's float32 x and w rounded by the op's reorders;
   w, stamped, once; y float32) or int8 (x s8/u8 and w s8 as the caller quantized them;
   scale[f] per output channel, a runtime argument after y). int8 only: out_type KD_S8 /
   KD_U8 gives y requantized: divided by a runtime dst scale (one float after the weight
   scales), rounded to nearest even and saturated. A residual (sum_type >= 0) of y's
   size is what y holds when the op runs (the caller put it there), times sum_scale (a
   oneDNN sum post-op); a float32 residual of an int8 y is an argument of its own after
   y, added as it is (a binary post-op). cl: x, y and the residual stored channels-last
   (N, *S, C), oneDNN's own layout for int8.
   Arguments: x, w, [bias], y, [float32 residual], [scale], [dst scale]. */
static kd_op *kd_conv_lowp_make(int nsp, const int64_t *xd, const int64_t *wd,
                                const int64_t *yd, const int64_t *stride,
                                const int64_t *dilation, const int64_t *pad_lo,
                                const int64_t *pad_hi, int64_t groups, int in_type, int bias,
                                int act, int cl, int out_type, int sum_type, float sum_scale) {
  int int8 = in_type != KD_BF16, wnd;
  dnnl_dims_t st, dl, pl, ph;
  int64_t wg[DNNL_MAX_NDIMS], bd[1] = {wd[0]}, scaled[1] = {wd[0]}, one[1] = {1};
  for (int i = 0; i < nsp; i++) {
    st[i] = stride[i]; dl[i] = dilation[i] - 1; pl[i] = pad_lo[i]; ph[i] = pad_hi[i];
  }
  wnd = kd_conv_weight_dims(wg, wd, nsp, groups);
  int requant = int8 && out_type != KD_F32;
  dnnl_data_type_t xt = kd_lowp_type(in_type), wt = int8 ? dnnl_s8 : dnnl_bf16;
  dnnl_data_type_t yt = int8 ? kd_lowp_type(out_type) : dnnl_f32;
  dnnl_memory_desc_t xa = cl ? kd_lowp_act(nsp + 2, xd, xt, 1) : kd_lowp_any(nsp + 2, xd, xt);
  dnnl_memory_desc_t wa = kd_lowp_any(wnd, wg, wt);
  dnnl_memory_desc_t ya = (cl || sum_type >= 0) ? kd_lowp_act(nsp + 2, yd, yt, cl)
                                                : kd_lowp_any(nsp + 2, yd, yt);
  dnnl_memory_desc_t ba = bias ? kd_lowp_plain(1, bd, dnnl_f32) : 0, ra = 0;
  dnnl_primitive_attr_t attr = kd_attr();
  dnnl_post_ops_t po = 0;
  dnnl_primitive_desc_t pd = 0;
  dnnl_memory_desc_t user[KD_MAX_ARGS] = {0};
  int args[KD_MAX_ARGS], outs[KD_MAX_ARGS] = {0}, nargs = 0;
  if (kd_init()) goto fail;
  if (!xa || !wa || !ya || !attr || (bias && !ba)) {
    snprintf(kd_message, sizeof kd_message, "low-precision conv: bad dims");
    goto fail;
  }
  /* the sum reads y as it lies: a type of y's size, or a float32 residual of its own */
  int binary = requant && sum_type == KD_F32;
  if ((!int8 && (out_type != KD_F32 || sum_type >= 0)) || sum_type == KD_BF16 ||
      (sum_type >= 0 && !requant && sum_type != KD_F32)) {
    snprintf(kd_message, sizeof kd_message, "low-precision conv: unsupported output/sum types");
    goto fail;
  }
  if (int8)
    KD_TRY(dnnl_primitive_attr_set_scales_mask(attr, DNNL_ARG_WEIGHTS,
                                               groups > 1 ? 3 : 1));
  if (requant) KD_TRY(dnnl_primitive_attr_set_scales_mask(attr, DNNL_ARG_DST, 0));
  if (act || sum_type >= 0) KD_TRY(dnnl_post_ops_create(&po));
  if (binary) {
    if (!(ra = kd_lowp_act(nsp + 2, yd, dnnl_f32, cl))) goto fail;
    KD_TRY(dnnl_post_ops_append_binary(po, dnnl_binary_add, ra));
  }
  else if (sum_type >= 0)
    KD_TRY(dnnl_post_ops_append_sum(po, sum_scale, 0,
                                    sum_type == out_type ? dnnl_data_type_undef
                                                         : kd_lowp_type(sum_type)));
  if (act) {    /* as shim.c's convolutions: elu(alpha 0) + 0 keeps NaN, as kiln's relu */
    KD_TRY(dnnl_post_ops_append_eltwise(po, dnnl_eltwise_elu, 0.0f, 0.0f));
    KD_TRY(dnnl_post_ops_append_eltwise(po, dnnl_eltwise_linear, 1.0f, 0.0f));
  }
  if (po) KD_TRY(dnnl_primitive_attr_set_post_ops(attr, po));
  KD_TRY(dnnl_convolution_forward_primitive_desc_create(&pd, kd_engine,
      dnnl_forward_inference, dnnl_convolution_direct, xa, wa, ba, ya, st, dl, pl, ph, attr));
  if (kd_real_kernel(pd, "low-precision conv")) goto fail;
  args[0] = DNNL_ARG_SRC; user[0] = kd_lowp_act(nsp + 2, xd, int8 ? xt : dnnl_f32, cl);
  args[1] = DNNL_ARG_WEIGHTS; user[1] = kd_lowp_plain(wnd, wg, int8 ? dnnl_s8 : dnnl_f32);
  nargs = 2;
  if (bias) { args[nargs] = DNNL_ARG_BIAS; user[nargs] = kd_lowp_plain(1, bd, dnnl_f32); nargs++; }
  args[nargs] = DNNL_ARG_DST; outs[nargs] = 1;
  user[nargs] = kd_lowp_act(nsp + 2, yd, yt, cl); nargs++;
  if (binary) {
    args[nargs] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1;
    user[nargs] = kd_lowp_act(nsp + 2, yd, dnnl_f32, cl); nargs++;
  }
  dnnl_memory_desc_destroy(xa); dnnl_memory_desc_destroy(wa); dnnl_memory_desc_destroy(ya);
  if (ba) dnnl_memory_desc_destroy(ba);
  if (ra) dnnl_memory_desc_destroy(ra);
  if (po) dnnl_post_ops_destroy(po);
  dnnl_primitive_attr_destroy(attr);
  kd_op *op = kd_lowp_with_scales(kd_make(pd, nargs, args, outs, user), int8, scaled,
                                  DNNL_ARG_WEIGHTS);
  return kd_lowp_with_scales(op, requant, one, DNNL_ARG_DST);
fail:
  if (ra) dnnl_memory_desc_destroy(ra);
  if (xa) dnnl_memory_desc_destroy(xa);
  if (wa) dnnl_memory_desc_destroy(wa);
  if (ya) dnnl_memory_desc_destroy(ya);
  if (ba) dnnl_memory_desc_destroy(ba);
  if (po) dnnl_post_ops_destroy(po);
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (pd) dnnl_primitive_desc_destroy(pd);
  for (int i = 0; i < KD_MAX_ARGS; i++) if (user[i]) dnnl_memory_desc_destroy(user[i]);
  return 0;
}

kd_op *kd_conv_lowp(int nsp, const int64_t *xd, const int64_t *wd, const int64_t *yd,
                    const int64_t *stride, const int64_t *dilation, const int64_t *pad_lo,
                    const int64_t *pad_hi, int64_t groups, int in_type, int bias, int act,
                    int cl, int out_type, int sum_type, float sum_scale) {
  if (nsp < 1 || nsp > 3) {
    snprintf(kd_message, sizeof kd_message, "low-precision conv over %d dims (1 to 3)", nsp);
    return 0;
  }
  int before = kd_enter();
  kd_op *op = kd_conv_lowp_make(nsp, xd, wd, yd, stride, dilation, pad_lo, pad_hi, groups,
                                in_type, bias, act, cl, out_type, sum_type, sum_scale);
  kd_leave(before);
  return op;
}

/* The ISA oneDNN dispatches to on this CPU (for `python -m kiln info` and the bench). */
const char *kd_isa(void) {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx2_vnni_2: return "avx2_vnni_2";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_fp16: return "avx512_core_fp16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_avx512_core_amx_fp16: return "avx512_core_amx_fp16";
    default: return "other";
  }
}
