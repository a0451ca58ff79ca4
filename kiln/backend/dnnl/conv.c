/* Convolutions on oneDNN: forward, backward data and backward weights, built and run with
   shim.c's machinery (kd_make, kd_act, kd_dims); compiled right after shim.c (library.py). */

/* Convolution over nsp spatial dims; x (N,C,*S), y (N,F,*O), w (F,C/g,*K) stored as
   (g,F/g,C/g,*K) when groups > 1. which: 0 forward (x,w,[b],y), 1 backward data
   (gy,w,gx), 2 backward weights (x,gy,gw,[gb]). dilation is kiln's (1 = dense).
   flags: KD_BIAS, KD_CHANNELS_LAST (x, y and their gradients stored channels-last; the
   primitive then works on them in place, where with plain NCHW oneDNN's kernels want a
   blocked copy of each), KD_RELU (forward: y = relu(conv + bias), a post-op),
   KD_TRAINING (forward: the training kernel, as for a backward pass; on plain NCHW
   activations oneDNN then picks a blocked layout, whose reorders cost less than the
   channels-last ones of its inference kernel: six of GoogLeNet's convolutions at batch
   128 took 236 ms against 295 ms, reorders included, on 2 AVX-512 cores), KD_MIXED_BF16 (the
   products in bfloat16, accumulated in float32: the primitive reads x, w and dy as
   bfloat16, which its reorders round from the caller's float32 (w, stamped, once), and
   writes y, dx and dw in float32: mixed precision). */
/* The weight dims oneDNN takes: (F, C/g, *K) as stored, or (g, F/g, C/g, *K) when grouped.
   Returns how many dims wg holds. */
static int kd_conv_weight_dims(int64_t *wg, const int64_t *wd, int nsp, int64_t groups) {
  if (groups > 1) {
    wg[0] = groups; wg[1] = wd[0] / groups;
    for (int i = 1; i < nsp + 2; i++) wg[i + 1] = wd[i];
    return nsp + 3;
  }
  for (int i = 0; i < nsp + 2; i++) wg[i] = wd[i];
  return nsp + 2;
}

#define KD_BIAS 1
#define KD_CHANNELS_LAST 2
#define KD_RELU 4
#define KD_TRAINING 8
#define KD_MIXED_BF16 16
static kd_op *kd_conv_make(int which, int nsp, const int64_t *xd, const int64_t *wd, const int64_t *yd,
               const int64_t *stride, const int64_t *dilation, const int64_t *pad_lo,
               const int64_t *pad_hi, int64_t groups, int flags) {
  int with_bias = flags & KD_BIAS, cl = (flags & KD_CHANNELS_LAST) != 0;
  /* bfloat16: what the primitive reads is bfloat16, what it writes float32 */
  dnnl_data_type_t low = (flags & KD_MIXED_BF16) ? dnnl_bf16 : dnnl_f32;
  dnnl_data_type_t xt = which == 1 ? dnnl_f32 : low, wt = which == 2 ? dnnl_f32 : low;
  dnnl_data_type_t yt = which == 0 ? dnnl_f32 : low;
  dnnl_dims_t st, dl, pl, ph;
  int64_t wg[DNNL_MAX_NDIMS];
  int wnd = kd_conv_weight_dims(wg, wd, nsp, groups);
  kd_dims(st, nsp, stride, 0); kd_dims(dl, nsp, dilation, 1);
  kd_dims(pl, nsp, pad_lo, 0); kd_dims(ph, nsp, pad_hi, 0);
  int64_t bd[1] = {wd[0]};
  dnnl_memory_desc_t xa = cl ? kd_act_typed(nsp + 2, xd, 1, xt) : kd_any_typed(nsp + 2, xd, xt);
  dnnl_memory_desc_t ya = cl ? kd_act_typed(nsp + 2, yd, 1, yt) : kd_any_typed(nsp + 2, yd, yt);
  dnnl_memory_desc_t wa = kd_any_typed(wnd, wg, wt);
  dnnl_memory_desc_t ba = with_bias ? kd_plain(1, bd) : 0;
  dnnl_primitive_attr_t attr = kd_attr();
  dnnl_post_ops_t po = 0;
  dnnl_primitive_desc_t fwd = 0, pd = 0;
  dnnl_memory_desc_t user[KD_MAX_ARGS] = {0};
  int args[KD_MAX_ARGS], outs[KD_MAX_ARGS], nargs = 0;
  if (kd_init()) goto fail;
  if (which == 0 && (flags & KD_RELU)) {
    KD_TRY(dnnl_post_ops_create(&po));
    /* ReLU as elu with alpha 0 (x > 0 ? x : 0 * expm1(x)), then + 0: oneDNN's relu
       post-op is max(x, 0), which turns NaN into 0 where kiln's relu (NumPy's maximum)
       keeps it; this gives x, +0 or NaN exactly as eager does */
    KD_TRY(dnnl_post_ops_append_eltwise(po, dnnl_eltwise_elu, 0.0f, 0.0f));
    KD_TRY(dnnl_post_ops_append_eltwise(po, dnnl_eltwise_linear, 1.0f, 0.0f));
    KD_TRY(dnnl_primitive_attr_set_post_ops(attr, po));
  }
  if (which != 0 && low != dnnl_f32) {
    /* a backward's forward hint: the bfloat16 forward (one type throughout) */
    dnnl_memory_desc_t hx = cl ? kd_act_typed(nsp + 2, xd, 1, low) : kd_any_typed(nsp + 2, xd, low);
    dnnl_memory_desc_t hy = cl ? kd_act_typed(nsp + 2, yd, 1, low) : kd_any_typed(nsp + 2, yd, low);
    dnnl_memory_desc_t hw = kd_any_typed(wnd, wg, low);
    dnnl_status_t st_h = hx && hy && hw ? dnnl_convolution_forward_primitive_desc_create(
        &fwd, kd_engine, dnnl_forward_training, dnnl_convolution_direct, hx, hw, 0, hy, st, dl,
        pl, ph, attr) : dnnl_out_of_memory;
    if (hx) dnnl_memory_desc_destroy(hx);
    if (hy) dnnl_memory_desc_destroy(hy);
    if (hw) dnnl_memory_desc_destroy(hw);
    KD_TRY(st_h);
  } else {
    KD_TRY(dnnl_convolution_forward_primitive_desc_create(&fwd, kd_engine,
        which == 0 && !(flags & KD_TRAINING) ? dnnl_forward_inference : dnnl_forward_training,
        dnnl_convolution_direct,
        xa, wa, ba, ya, st, dl, pl, ph, attr));
  }
  if (which == 0) {
    pd = fwd; fwd = 0;
    args[0] = DNNL_ARG_SRC; args[1] = DNNL_ARG_WEIGHTS; outs[0] = outs[1] = 0;
    user[0] = kd_act(nsp + 2, xd, cl); user[1] = kd_plain(wnd, wg); nargs = 2;
    if (with_bias) { args[2] = DNNL_ARG_BIAS; outs[2] = 0; user[2] = kd_plain(1, bd); nargs = 3; }
    args[nargs] = DNNL_ARG_DST; outs[nargs] = 1; user[nargs] = kd_act(nsp + 2, yd, cl); nargs++;
  } else if (which == 1) {
    KD_TRY(dnnl_convolution_backward_data_primitive_desc_create(&pd, kd_engine,
        dnnl_convolution_direct, xa, wa, ya, st, dl, pl, ph, fwd, attr));
    args[0] = DNNL_ARG_DIFF_DST; args[1] = DNNL_ARG_WEIGHTS; args[2] = DNNL_ARG_DIFF_SRC;
    outs[0] = outs[1] = 0; outs[2] = 1;
    user[0] = kd_act(nsp + 2, yd, cl); user[1] = kd_plain(wnd, wg);
    user[2] = kd_act(nsp + 2, xd, cl);
    nargs = 3;
  } else {
    KD_TRY(dnnl_convolution_backward_weights_primitive_desc_create(&pd, kd_engine,
        dnnl_convolution_direct, xa, wa, ba, ya, st, dl, pl, ph, fwd, attr));
    args[0] = DNNL_ARG_SRC; args[1] = DNNL_ARG_DIFF_DST; args[2] = DNNL_ARG_DIFF_WEIGHTS;
    outs[0] = outs[1] = 0; outs[2] = 1;
    user[0] = kd_act(nsp + 2, xd, cl); user[1] = kd_act(nsp + 2, yd, cl);
    user[2] = kd_plain(wnd, wg);
    nargs = 3;
    if (with_bias) { args[3] = DNNL_ARG_DIFF_BIAS; outs[3] = 1; user[3] = kd_plain(1, bd); nargs = 4; }
  }
  dnnl_memory_desc_destroy(xa); dnnl_memory_desc_destroy(ya); dnnl_memory_desc_destroy(wa);
  if (ba) dnnl_memory_desc_destroy(ba);
  dnnl_primitive_attr_destroy(attr);
  if (po) dnnl_post_ops_destroy(po);
  if (fwd) dnnl_primitive_desc_destroy(fwd);
  return kd_make(pd, nargs, args, outs, user);
fail:
  dnnl_memory_desc_destroy(xa); dnnl_memory_desc_destroy(ya); dnnl_memory_desc_destroy(wa);
  if (ba) dnnl_memory_desc_destroy(ba);
  if (po) dnnl_post_ops_destroy(po);
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (fwd) dnnl_primitive_desc_destroy(fwd);
  for (int i = 0; i < KD_MAX_ARGS; i++) if (user[i]) dnnl_memory_desc_destroy(user[i]);
  return 0;
}

/* The dims arrays below hold DNNL_MAX_NDIMS entries; oneDNN convolves 1 to 3 of them. */
static int kd_spatial_ok(int nsp) {
  if (nsp >= 1 && nsp <= 3) return 1;
  snprintf(kd_message, sizeof kd_message, "%d spatial dimensions (oneDNN takes 1 to 3)", nsp);
  return 0;
}

kd_op *kd_conv(int which, int nsp, const int64_t *xd, const int64_t *wd, const int64_t *yd,
               const int64_t *stride, const int64_t *dilation, const int64_t *pad_lo,
               const int64_t *pad_hi, int64_t groups, int flags) {
  if (!kd_spatial_ok(nsp)) return 0;
  int before = kd_enter();
  kd_op *op = kd_conv_make(which, nsp, xd, wd, yd, stride, dilation, pad_lo, pad_hi, groups,
                           flags);
  kd_leave(before);
  return op;
}
