/* Copies in oneDNN's layout that the caller holds and shares between ops.

   library.py compiles this file after shim.c as one library. An op converts each argument
   whose layout differs from the caller's into a copy of its own (shim.c) and forgets it
   after the call. In an eager training step several ops want the same copy: the
   backward-data op (gy, w, gx) and the backward-weights op (x, gy, gw) of one
   convolution both want gy in the blocked layout, and the convolutions that read one
   activation (a GoogLeNet block's branches), and their weight gradients later, want it
   the same way. MXNet keeps its arrays blocked and converts each once; here the caller
   keeps such a copy (kiln/backend/dnnl/ops.py files it with the array it came from) and
   hands it to each op: kd_arg_layout names an argument's layout, so that the caller can
   tell when two ops want the same; kd_run_held runs an op on held copies, converting
   into them where asked. */

/* The layout argument i of op wants as numbers (data type, dims, padded dims, strides,
   inner blocks and their indices) into out[0..cap): equal lists are one layout. Returns
   how many, 0 when the op reads the caller's layout itself, -1 when cap is too small. */
int kd_arg_layout(kd_op *op, int i, int64_t *out, int cap) {
  const kd_arg *a = &op->args[i];
  const_dnnl_memory_desc_t md = 0;
  if (!a->lib || dnnl_memory_get_memory_desc(a->lib, &md) != dnnl_success) return 0;
  int nd = 0, nblks = 0, kind = 0, type = 0;
  const dnnl_dims_t *dims = 0, *padded = 0, *strides = 0, *blks = 0, *idxs = 0;
  if (dnnl_memory_desc_query(md, dnnl_query_format_kind, &kind) != dnnl_success
      || kind != dnnl_blocked
      || dnnl_memory_desc_query(md, dnnl_query_data_type, &type) != dnnl_success
      || dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &nd) != dnnl_success
      || dnnl_memory_desc_query(md, dnnl_query_dims, &dims) != dnnl_success
      || dnnl_memory_desc_query(md, dnnl_query_padded_dims, &padded) != dnnl_success
      || dnnl_memory_desc_query(md, dnnl_query_strides, &strides) != dnnl_success
      || dnnl_memory_desc_query(md, dnnl_query_inner_nblks_s32, &nblks) != dnnl_success
      || dnnl_memory_desc_query(md, dnnl_query_inner_blks, &blks) != dnnl_success
      || dnnl_memory_desc_query(md, dnnl_query_inner_idxs, &idxs) != dnnl_success)
    return 0;
  int n = 0, need = 4 + 3 * nd + 2 * nblks;
  if (need > cap) return -1;
  out[n++] = (int64_t)a->lib_size; out[n++] = type; out[n++] = nd; out[n++] = nblks;
  for (int k = 0; k < nd; k++) out[n++] = (*dims)[k];
  for (int k = 0; k < nd; k++) out[n++] = (*padded)[k];
  for (int k = 0; k < nd; k++) out[n++] = (*strides)[k];
  for (int k = 0; k < nblks; k++) out[n++] = (*blks)[k];
  for (int k = 0; k < nblks; k++) out[n++] = (*idxs)[k];
  return n;
}

/* kd_run where held[i], when not 0, is a buffer of kd_arg_layout(op, i)'s layout and
   size: an input is converted into it when bit i of fill is set, and read as it is
   otherwise (the caller converted it for an earlier op). */
int kd_run_held(kd_op *op, void *const *ptrs, void *const *held, int fill) {
  int before = kd_op_enter(op);
  pthread_mutex_lock(&op->lock);
  int rc = kd_run_held_locked(op, ptrs, 0, held, fill);
  pthread_mutex_unlock(&op->lock);
  kd_op_leave(before);
  return rc;
}

static const_dnnl_memory_desc_t kd_lib_md(const kd_arg *a) {
  const_dnnl_memory_desc_t md = 0;
  if (!a->lib || dnnl_memory_get_memory_desc(a->lib, &md) != dnnl_success) return 0;
  return md;
}

/* Both ops locked (always data first, so two callers cannot deadlock). */
static int kd_conv_backward_locked(kd_op *data, kd_op *weights, void *const *ptrs,
                                   void *held_x) {
  void *data_ptrs[3] = {ptrs[0], ptrs[1], ptrs[3]};
  void *weights_ptrs[4] = {ptrs[2], ptrs[0], ptrs[4], ptrs[5]};
  void *weights_held[4] = {held_x, 0, 0, 0};
  kd_arg *gd = &data->args[0], *gw = &weights->args[1];
  const_dnnl_memory_desc_t md = kd_lib_md(gd), mw = kd_lib_md(gw);
  if (!md || !mw || !dnnl_memory_desc_equal(md, mw)) {
    if (kd_run_locked(data, data_ptrs, 0)) return -1;
    return kd_run_held_locked(weights, weights_ptrs, 0, weights_held, 0);
  }
  size_t nd = kd_need(data, 0, 0);
  weights_held[1] = (void *)1;      /* any non-0: the shared copy, not in the buffer */
  size_t nw = kd_need(weights, 0, weights_held);
  size_t copy = gd->lib_size, need = copy + (nd > nw ? nd : nw);
  char *buf = kd_transient_or_fail(need);
  if (!buf) return -1;
  KD_TRY(dnnl_memory_set_data_handle(gd->user, ptrs[0]));
  KD_TRY(dnnl_memory_set_data_handle(gd->lib, buf));
  dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, gd->user}, {DNNL_ARG_TO, gd->lib}};
  KD_TRY(dnnl_primitive_execute(gd->reorder, kd_stream, 2, r));
  void *data_held[3] = {buf, 0, 0};
  weights_held[1] = buf;
  if (kd_exec(data, data_ptrs, 0, data_held, 0, buf + copy)) return -1;
  return kd_exec(weights, weights_ptrs, 0, weights_held, 0, buf + copy);
fail:
  return -1;
}

/* ptrs: gy, w, x, gx, gw, gb (the caller's layouts, as for kd_run of each op; gb, the
   bias gradient, only when the weights op was made with KD_BIAS). data and weights:
   kd_conv ops 1 and 2 of one convolution (same shapes, attributes, flags).
   held_x (may be 0): x already in the weights op's layout (kd_arg_layout(weights, 0)). */
int kd_conv_backward(kd_op *data, kd_op *weights, void *const *ptrs, void *held_x) {
  if (data->nargs != 3 || weights->nargs < 3 || weights->args[0].arg != DNNL_ARG_SRC) {
    snprintf(kd_message, sizeof kd_message,
             "kd_conv_backward takes a backward-data and a backward-weights op");
    return -1;
  }
  int before = kd_op_enter(data);
  pthread_mutex_lock(&data->lock);
  pthread_mutex_lock(&weights->lock);
  int rc = kd_conv_backward_locked(data, weights, ptrs, held_x);
  pthread_mutex_unlock(&weights->lock);
  pthread_mutex_unlock(&data->lock);
  kd_op_leave(before);
  return rc;
}
