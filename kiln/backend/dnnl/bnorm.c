/* Batch normalization for eager mode (kiln/backend/dnnl/ops.py, kiln/ops/batchnorm.py).

   library.py compiles this file after shim.c as one library. x is the caller's plain
   row-major array viewed as (outer, C, inner) around its channel axis; gamma, beta, mean
   and var are (C) float vectors; the variance is the biased one (a division by the count),
   as kiln's own kernels compute it.

   inner == 1 ((N, C) after a dense layer, or channels last): oneDNN's batch_normalization
   primitive, a shim op run by kd_run, on x as the 2-D (outer, C), where oneDNN takes its
   JIT kernel. which:
     0 forward training:  (x, scale, shift, y, mean, variance); y uses, and mean and
                          variance return, the statistics of x
     1 forward inference: (x, mean, variance, scale, shift, y) with the given statistics
     2 backward:          (x, mean, variance, gy, scale, gx, gscale, gshift) with the
                          statistics the forward pass used
   inner > 1 (NCHW): the row loops at the end of this file (why: see there). */
#include <math.h>

kd_op *kd_bnorm(int which, int nd, const int64_t *dims, float eps) {
  dnnl_memory_desc_t md = 0;
  dnnl_primitive_attr_t attr = 0;
  dnnl_primitive_desc_t fwd = 0, pd = 0;
  dnnl_memory_desc_t user[KD_MAX_ARGS] = {0};
  int args[KD_MAX_ARGS], outs[KD_MAX_ARGS] = {0}, nargs = 0;
  kd_op *op = 0;
  unsigned flags = dnnl_use_scale | dnnl_use_shift;
  int64_t c[1];
  int before = kd_enter();
  if (nd < 2 || nd > DNNL_MAX_NDIMS || which < 0 || which > 2) {
    snprintf(kd_message, sizeof kd_message, "batch norm: %d dims, kind %d", nd, which);
    goto fail;
  }
  c[0] = dims[1];
  md = kd_plain(nd, dims);
  attr = kd_attr();
  if (kd_init() || !md || !attr) goto fail;
  KD_TRY(dnnl_batch_normalization_forward_primitive_desc_create(&fwd, kd_engine,
      which == 1 ? dnnl_forward_inference : dnnl_forward_training, md, md, eps,
      which == 1 ? flags | dnnl_use_global_stats : flags, attr));
  if (which == 0) {
    pd = fwd; fwd = 0;
    args[0] = DNNL_ARG_SRC; args[1] = DNNL_ARG_SCALE; args[2] = DNNL_ARG_SHIFT;
    args[3] = DNNL_ARG_DST; args[4] = DNNL_ARG_MEAN; args[5] = DNNL_ARG_VARIANCE;
    outs[3] = outs[4] = outs[5] = 1;
    nargs = 6;
  } else if (which == 1) {
    pd = fwd; fwd = 0;
    args[0] = DNNL_ARG_SRC; args[1] = DNNL_ARG_MEAN; args[2] = DNNL_ARG_VARIANCE;
    args[3] = DNNL_ARG_SCALE; args[4] = DNNL_ARG_SHIFT; args[5] = DNNL_ARG_DST;
    outs[5] = 1;
    nargs = 6;
  } else {
    KD_TRY(dnnl_batch_normalization_backward_primitive_desc_create(&pd, kd_engine,
        dnnl_backward, md, md, md, eps, flags, fwd, attr));
    args[0] = DNNL_ARG_SRC; args[1] = DNNL_ARG_MEAN; args[2] = DNNL_ARG_VARIANCE;
    args[3] = DNNL_ARG_DIFF_DST; args[4] = DNNL_ARG_SCALE; args[5] = DNNL_ARG_DIFF_SRC;
    args[6] = DNNL_ARG_DIFF_SCALE; args[7] = DNNL_ARG_DIFF_SHIFT;
    outs[5] = outs[6] = outs[7] = 1;
    nargs = 8;
  }
  for (int i = 0; i < nargs; i++) {
    int full = args[i] == DNNL_ARG_SRC || args[i] == DNNL_ARG_DST ||
               args[i] == DNNL_ARG_DIFF_DST || args[i] == DNNL_ARG_DIFF_SRC;
    user[i] = full ? kd_plain(nd, dims) : kd_plain(1, c);
    if (!user[i]) {
      snprintf(kd_message, sizeof kd_message, "batch norm: bad dims");
      goto fail;
    }
  }
  op = kd_make(pd, nargs, args, outs, user);   /* frees pd and user */
  pd = 0;
  for (int i = 0; i < nargs; i++) user[i] = 0;
fail:
  for (int i = 0; i < KD_MAX_ARGS; i++) if (user[i]) dnnl_memory_desc_destroy(user[i]);
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (fwd) dnnl_primitive_desc_destroy(fwd);
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (md) dnnl_memory_desc_destroy(md);
  kd_leave(before);
  return op;
}

/* ---- channels-first rows ------------------------------------------------------------------
   x as (outer, C, inner) with inner > 1 (NCHW): oneDNN's batch normalization on that plain
   layout is its generic ncsp kernel, slower than NumPy in CPU time, and a reorder to the
   blocked layout its JIT kernels take costs more passes than it saves (at (128, 64, 784):
   forward training 20 ms of CPU ncsp, 11 ms blocked with the reorders, 13.5 ms NumPy;
   3.6 ms here; backward 20, 18, 21.5 and 6 ms). These loops walk the
   rows of `inner` contiguous elements in memory order, one pass per statistic set, with
   double accumulators (statistics shifted by each channel's first element, so the one-pass
   variance does not cancel when the mean is large against the spread). One thread: the
   caller's step is measured in CPU time. */

/* sums of d and d * d, d = x - shift, over one row */
static void kd_row_sums(const float *x, int64_t n, double shift, double *s1, double *s2) {
  double a = 0, b = 0;
#pragma omp simd reduction(+:a, b)
  for (int64_t i = 0; i < n; i++) { double d = (double)x[i] - shift; a += d; b += d * d; }
  *s1 += a; *s2 += b;
}

/* mean and biased variance (C each) of x; work: 2 * C doubles */
void kd_bn_rows_stats(const float *x, int64_t outer, int64_t c, int64_t inner,
                      float *mean, float *var, double *work) {
  double *s1 = work, *s2 = work + c;
  int64_t m = outer * inner;
  for (int64_t j = 0; j < c; j++) s1[j] = s2[j] = 0;
  if (inner == 1) {         /* channels last: vectorized across the channels of a row */
    for (int64_t o = 0; o < outer; o++) {
      const float *xr = x + o * c;
#pragma omp simd
      for (int64_t j = 0; j < c; j++) {
        double d = (double)xr[j] - x[j];
        s1[j] += d; s2[j] += d * d;
      }
    }
  } else {
    for (int64_t o = 0; o < outer; o++)
      for (int64_t j = 0; j < c; j++)
        kd_row_sums(x + (o * c + j) * inner, inner, x[j * inner], &s1[j], &s2[j]);
  }
  for (int64_t j = 0; j < c; j++) {
    double shift = x[j * inner], mu = s1[j] / m, v = s2[j] / m - mu * mu;
    mean[j] = (float)(mu + shift);
    var[j] = (float)(v > 0 ? v : (v == v ? 0 : v));     /* NaN stays NaN */
  }
}

/* y = (x - mean) * a + b per channel (a = gamma / sqrt(var + eps), b = beta) */
void kd_bn_rows_apply(const float *x, int64_t outer, int64_t c, int64_t inner,
                      const float *mean, const float *var, const float *gamma,
                      const float *beta, float eps, float *y) {
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < c; j++) {
      const float *xr = x + (o * c + j) * inner;
      float *yr = y + (o * c + j) * inner;
      float mu = mean[j], a = gamma[j] / sqrtf(var[j] + eps), b = beta[j];
#pragma omp simd
      for (int64_t i = 0; i < inner; i++) yr[i] = (xr[i] - mu) * a + b;
    }
}

/* The gradient of y = (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta: dx, and dgamma,
   dbeta (C each). One pass over x and g for every sum (x's statistics, shifted as in
   kd_bn_rows_stats, with sum(g) and sum(g * (x - shift))), one for dx. work: 4 * C. */
void kd_bn_rows_backward(const float *x, const float *g, int64_t outer, int64_t c,
                         int64_t inner, const float *gamma, float eps, float *dx,
                         float *dgamma, float *dbeta, double *work) {
  double *s1 = work, *s2 = work + c, *sg = work + 2 * c, *sgd = work + 3 * c;
  int64_t m = outer * inner;
  for (int64_t j = 0; j < 4 * c; j++) work[j] = 0;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < c; j++) {
      const float *xr = x + (o * c + j) * inner, *gr = g + (o * c + j) * inner;
      double shift = x[j * inner], a = 0, b = 0, e = 0, f = 0;
#pragma omp simd reduction(+:a, b, e, f)
      for (int64_t i = 0; i < inner; i++) {
        double d = (double)xr[i] - shift;
        a += d; b += d * d; e += gr[i]; f += gr[i] * d;
      }
      s1[j] += a; s2[j] += b; sg[j] += e; sgd[j] += f;
    }
  for (int64_t j = 0; j < c; j++) {
    double dm = s1[j] / m, v = s2[j] / m - dm * dm;
    if (!(v > 0) && v == v) v = 0;
    float var = (float)v;
    double r = 1.0 / sqrt((double)var + eps), k = gamma[j] * r;
    double pg1 = sgd[j] - dm * sg[j];           /* sum(g * (x - mean)) */
    dgamma[j] = (float)(pg1 * r);
    dbeta[j] = (float)sg[j];
    /* the per-channel coefficients of dx = g * k + (x - mean) * a + b, kept in work */
    double pg0 = sg[j];
    s1[j] = (float)(dm + x[j * inner]);          /* the mean, as kd_bn_rows_stats rounds it */
    s2[j] = k;
    sg[j] = -k * r * r * pg1 / m;
    sgd[j] = -k * pg0 / m;
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < c; j++) {
      float mu = (float)s1[j], kf = (float)s2[j], af = (float)sg[j], bf = (float)sgd[j];
      const float *xr = x + (o * c + j) * inner, *gr = g + (o * c + j) * inner;
      float *dr = dx + (o * c + j) * inner;
#pragma omp simd
      for (int64_t i = 0; i < inner; i++) dr[i] = gr[i] * kf + (xr[i] - mu) * af + bf;
    }
}
