/* The start of every generated program (codegen.generate puts it first): the C headers,
   the ABI version build.py checks, the vectorized transcendental functions
   (vector_math.h), and the scalar functions that the elementwise expressions of loops.py
   and the gathers call. Ends with special_functions.h. */
#include <stdint.h>
#include <string.h>
#include <math.h>

int kiln_abi_version(void) { return 1; }


/* bfloat16 is stored as the top 16 bits of a float32 (uint16_t in C): widening is exact;
   narrowing rounds to nearest even, as ml_dtypes and PyTorch do, and keeps NaN a NaN */
static inline float kiln_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint16_t kiln_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}


#include "vector_math.h"

/* the two-sided form never overflows exp; a select, not a branch, so a loop of it
   vectorizes */
static inline float kiln_sigmoidf(float x) {
  float e = kiln_vm_expf(-fabsf(x)), r = 1.0f / (1.0f + e);
  return x >= 0 ? r : e * r;
}
static inline double kiln_sigmoid(double x) {
  double e = kiln_vm_exp(-fabs(x)), r = 1.0 / (1.0 + e);
  return x >= 0 ? r : e * r;
}
/* NumPy's maximum/minimum propagate NaN from either side */
static inline float kiln_max_float(float a, float b) { return (a != a || a > b) ? a : b; }
static inline float kiln_min_float(float a, float b) { return (a != a || a < b) ? a : b; }
static inline double kiln_max_double(double a, double b) { return (a != a || a > b) ? a : b; }
static inline double kiln_min_double(double a, double b) { return (a != a || a < b) ? a : b; }
/* NumPy's mod takes the sign of the divisor, a zero result too (-1.5 % 1.5 is +0.0, so
   its reciprocal is +inf); integer mod by zero gives 0 */
static inline float kiln_mod_float(float a, float b) {
  float r = fmodf(a, b);
  if (r == 0) return copysignf(0.0f, b);
  if ((r < 0) != (b < 0) && r == r) r += b;
  return r;
}
static inline double kiln_mod_double(double a, double b) {
  double r = fmod(a, b);
  if (r == 0) return copysign(0.0, b);
  if ((r < 0) != (b < 0) && r == r) r += b;
  return r;
}
static inline int32_t kiln_mod_int32(int32_t a, int32_t b) {
  if (b == 0 || b == -1) return 0;   /* INT_MIN % -1 traps on x86 */
  int32_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
static inline int64_t kiln_mod_int64(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
/* integer power; a negative exponent follows kiln's eager kernel (float power, truncated) */
static inline int64_t kiln_ipow_int64(int64_t a, int64_t b) {
  if (b < 0) return (int64_t)powf((float)a, (float)b);
  int64_t r = 1; while (b) { if (b & 1) r *= a; a *= a; b >>= 1; } return r; }
static inline int32_t kiln_ipow_int32(int32_t a, int32_t b) {
  if (b < 0) return (int32_t)powf((float)a, (float)b);
  int32_t r = 1; while (b) { if (b & 1) r *= a; a *= a; b >>= 1; } return r; }
static inline int64_t kiln_clip_index(int64_t j, int64_t n) {
  return j < 0 ? 0 : (j >= n ? n - 1 : j); }
static inline int64_t kiln_wrap_index(int64_t j, int64_t n) {
  int64_t r = j % n; return r < 0 ? r + n : r; }
#include "special_functions.h"
