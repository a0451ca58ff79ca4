/* Leaky ReLU for eager mode's float32 arrays (kiln/npx/fused_leaky.py), one pass each way.

   library.py compiles this file after shim.c as one library. The forward gives the bits of
   kiln's composite x * maximum(x > 0, slope) (a factor of exactly 1 or slope); the backward
   is that multiply's gradient, g times the same factor, read off the output: for
   0 <= slope <= 1, y > 0 exactly where x > 0 (NaN and -0 included), so x need not be kept.
   One thread: NumPy's four passes it replaces ran on one too. */

void kd_leaky_forward(const float *x, int64_t n, float slope, float *y) {
#pragma omp simd
  for (int64_t i = 0; i < n; i++) y[i] = x[i] * (x[i] > 0 ? 1.0f : slope);
}

void kd_leaky_backward(const float *g, const float *y, int64_t n, float slope, float *dx) {
#pragma omp simd
  for (int64_t i = 0; i < n; i++) dx[i] = g[i] * (y[i] > 0 ? 1.0f : slope);
}
