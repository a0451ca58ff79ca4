/* Elementwise ops on oneDNN for eager mode's large arrays (see kiln/backend/dnnl/ops.py).

   library.py compiles this file after shim.c as one library: an op here is a shim op,
   run by kd_run. */

/* Elementwise ops over n contiguous floats, for eager mode's large arrays (oneDNN runs
   them on its OpenMP threads, where NumPy takes one core). kind:
   0 ReLU (x, y); 1 ReLU's gradient from its output (gy, y, gx): gx = gy where y > 0, else
   0; 2 add (a, b, c); 3 multiply (a, b, c). */
kd_op *kd_elementwise(int kind, int64_t n) {
  int64_t dims[1] = {n};
  dnnl_memory_desc_t md = kd_plain(1, dims);
  dnnl_primitive_attr_t attr = kd_attr();
  dnnl_primitive_desc_t fwd = 0, pd = 0;
  dnnl_memory_desc_t user[KD_MAX_ARGS] = {0};
  int args[KD_MAX_ARGS], outs[KD_MAX_ARGS] = {0}, nargs = 0;
  kd_op *op = 0;
  int before = kd_enter();
  if (kd_init() || !md || !attr) goto fail;
  if (kind == 0 || kind == 1) {
    KD_TRY(dnnl_eltwise_forward_primitive_desc_create(&fwd, kd_engine,
        kind == 0 ? dnnl_forward_inference : dnnl_forward_training,
        dnnl_eltwise_relu_use_dst_for_bwd, md, md, 0.0f, 0.0f, attr));
    if (kind == 0) {
      pd = fwd; fwd = 0;
      args[0] = DNNL_ARG_SRC; args[1] = DNNL_ARG_DST; nargs = 2;
    } else {
      KD_TRY(dnnl_eltwise_backward_primitive_desc_create(&pd, kd_engine,
          dnnl_eltwise_relu_use_dst_for_bwd, md, md, md, 0.0f, 0.0f, fwd, attr));
      args[0] = DNNL_ARG_DIFF_DST; args[1] = DNNL_ARG_DST; args[2] = DNNL_ARG_DIFF_SRC;
      nargs = 3;
    }
  } else if (kind == 2 || kind == 3) {
    KD_TRY(dnnl_binary_primitive_desc_create(&pd, kd_engine,
        kind == 2 ? dnnl_binary_add : dnnl_binary_mul, md, md, md, attr));
    args[0] = DNNL_ARG_SRC_0; args[1] = DNNL_ARG_SRC_1; args[2] = DNNL_ARG_DST; nargs = 3;
  } else {
    snprintf(kd_message, sizeof kd_message, "unknown elementwise kind %d", kind);
    goto fail;
  }
  outs[nargs - 1] = 1;
  for (int i = 0; i < nargs; i++) user[i] = kd_plain(1, dims);
  op = kd_make(pd, nargs, args, outs, user);   /* frees pd and user */
  pd = 0;
fail:
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (fwd) dnnl_primitive_desc_destroy(fwd);
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (md) dnnl_memory_desc_destroy(md);
  kd_leave(before);
  return op;
}
