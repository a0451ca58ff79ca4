/* Pooling on oneDNN (see kiln/backend/dnnl/ops.py).

   library.py compiles this file after shim.c as one library: it builds its ops with the
   shim's machinery (kd_make, kd_act, kd_dims, kd_spatial_ok). */

/* Pooling; alg 0 max, 1 average counting padding, 2 average over the valid part.
   which: 0 forward (x,y), 1 forward keeping the max-pool workspace (x,y,ws),
   2 backward (gy,[ws],gx); the workspace is in oneDNN's own layout (kd_arg_size).
   flags: KD_CHANNELS_LAST as for kd_conv. */
static kd_op *kd_pool_make(int which, int alg, int nsp, const int64_t *xd, const int64_t *yd,
               const int64_t *kernel, const int64_t *stride, const int64_t *pad_lo,
               const int64_t *pad_hi, int flags) {
  int cl = (flags & KD_CHANNELS_LAST) != 0;
  dnnl_dims_t k, st, dl, pl, ph;
  kd_dims(k, nsp, kernel, 0); kd_dims(st, nsp, stride, 0);
  kd_dims(pl, nsp, pad_lo, 0); kd_dims(ph, nsp, pad_hi, 0);
  for (int i = 0; i < nsp; i++) dl[i] = 0;
  dnnl_alg_kind_t a = alg == 0 ? dnnl_pooling_max : alg == 1 ? dnnl_pooling_avg_include_padding
                                                              : dnnl_pooling_avg_exclude_padding;
  dnnl_memory_desc_t xm = kd_act(nsp + 2, xd, cl), ym = kd_act(nsp + 2, yd, cl);
  dnnl_primitive_attr_t attr = kd_attr();
  dnnl_primitive_desc_t fwd = 0, pd = 0;
  dnnl_memory_desc_t user[KD_MAX_ARGS] = {0};
  int args[KD_MAX_ARGS], outs[KD_MAX_ARGS] = {0}, nargs = 0;
  int keep = alg == 0 && which != 0;
  if (kd_init()) goto fail;
  KD_TRY(dnnl_pooling_forward_primitive_desc_create(&fwd, kd_engine,
      which == 0 ? dnnl_forward_inference : dnnl_forward_training, a, xm, ym, st, k, dl, pl, ph,
      attr));
  if (which < 2) {
    pd = fwd; fwd = 0;
    args[0] = DNNL_ARG_SRC; args[1] = DNNL_ARG_DST; outs[1] = 1; nargs = 2;
    user[0] = kd_act(nsp + 2, xd, cl); user[1] = kd_act(nsp + 2, yd, cl);
    if (keep) { args[2] = DNNL_ARG_WORKSPACE; outs[2] = 1; nargs = 3; }
  } else {
    KD_TRY(dnnl_pooling_backward_primitive_desc_create(&pd, kd_engine, a, xm, ym, st, k, dl,
                                                       pl, ph, fwd, attr));
    args[0] = DNNL_ARG_DIFF_DST; user[0] = kd_act(nsp + 2, yd, cl); nargs = 1;
    if (keep) { args[1] = DNNL_ARG_WORKSPACE; nargs = 2; }
    args[nargs] = DNNL_ARG_DIFF_SRC; outs[nargs] = 1; user[nargs] = kd_act(nsp + 2, xd, cl);
    nargs++;
  }
  dnnl_memory_desc_destroy(xm); dnnl_memory_desc_destroy(ym);
  dnnl_primitive_attr_destroy(attr);
  if (fwd) dnnl_primitive_desc_destroy(fwd);
  return kd_make(pd, nargs, args, outs, user);
fail:
  dnnl_memory_desc_destroy(xm); dnnl_memory_desc_destroy(ym);
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (fwd) dnnl_primitive_desc_destroy(fwd);
  for (int i = 0; i < KD_MAX_ARGS; i++) if (user[i]) dnnl_memory_desc_destroy(user[i]);
  return 0;
}

kd_op *kd_pool(int which, int alg, int nsp, const int64_t *xd, const int64_t *yd,
               const int64_t *kernel, const int64_t *stride, const int64_t *pad_lo,
               const int64_t *pad_hi, int flags) {
  if (!kd_spatial_ok(nsp)) return 0;
  int before = kd_enter();
  kd_op *op = kd_pool_make(which, alg, nsp, xd, yd, kernel, stride, pad_lo, pad_hi, flags);
  kd_leave(before);
  return op;
}
