/* Both halves of a convolution's gradient from one converted copy of the output gradient.

   library.py compiles this file after shim.c as one library. The backward-data op
   (gy, w, gx) and the backward-weights op (x, gy, gw) of kd_conv each want gy in
   oneDNN's blocked layout; run one after the other, each converts it itself. Here it is
   converted once, into the calling thread's buffer, and both primitives read that copy
   (MXNet keeps its gradients blocked and does the same). When the two want different
   layouts, or none, the ops simply run one after the other. */

static const_dnnl_memory_desc_t kd_lib_md(const kd_arg *a) {
  const_dnnl_memory_desc_t md = 0;
  if (!a->lib || dnnl_memory_get_memory_desc(a->lib, &md) != dnnl_success) return 0;
  return md;
}

/* Both ops locked (always data first, so two callers cannot deadlock). */
static int kd_conv_backward_locked(kd_op *data, kd_op *weights, void *const *ptrs) {
  void *data_ptrs[3] = {ptrs[0], ptrs[1], ptrs[3]};
  void *weights_ptrs[3] = {ptrs[2], ptrs[0], ptrs[4]};
  kd_arg *gd = &data->args[0], *gw = &weights->args[1];
  const_dnnl_memory_desc_t md = kd_lib_md(gd), mw = kd_lib_md(gw);
  if (!md || !mw || !dnnl_memory_desc_equal(md, mw)) {
    if (kd_run_locked(data, data_ptrs, 0)) return -1;
    return kd_run_locked(weights, weights_ptrs, 0);
  }
  size_t nd = kd_need(data, 0, 0), nw = kd_need(weights, 0, 1);
  size_t copy = gd->lib_size, need = copy + (nd > nw ? nd : nw);
  char *buf = kd_transient_or_fail(need);
  if (!buf) return -1;
  KD_TRY(dnnl_memory_set_data_handle(gd->user, ptrs[0]));
  KD_TRY(dnnl_memory_set_data_handle(gd->lib, buf));
  dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, gd->user}, {DNNL_ARG_TO, gd->lib}};
  KD_TRY(dnnl_primitive_execute(gd->reorder, kd_stream, 2, r));
  if (kd_exec(data, data_ptrs, 0, 0, buf, buf + copy)) return -1;
  return kd_exec(weights, weights_ptrs, 0, 1, buf, buf + copy);
fail:
  return -1;
}

/* ptrs: gy, w, x, gx, gw (the caller's layouts, as for kd_run of each op). data and
   weights: kd_conv ops 1 and 2 of one convolution (same shapes, attributes, flags). */
int kd_conv_backward(kd_op *data, kd_op *weights, void *const *ptrs) {
  if (data->nargs != 3 || weights->nargs != 3) {
    snprintf(kd_message, sizeof kd_message,
             "kd_conv_backward takes a backward-data and a backward-weights op without bias");
    return -1;
  }
  int before = kd_op_enter(data);
  pthread_mutex_lock(&data->lock);
  pthread_mutex_lock(&weights->lock);
  int rc = kd_conv_backward_locked(data, weights, ptrs);
  pthread_mutex_unlock(&weights->lock);
  pthread_mutex_unlock(&data->lock);
  kd_op_leave(before);
  return rc;
}
