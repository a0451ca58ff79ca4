/* digamma and erfinv for the special-function primitives, with the eager kernels'
   algorithms step for step (special_ops.py explains). Included at the end of
   program_prelude.h. */
static inline double kiln_digamma(double x) {
  double out = 0.0;
  if (x < 0.5) {                       /* reflection: psi(1 - x) - pi / tan(pi x) */
    out -= 3.141592653589793 / tan(3.141592653589793 * x);
    x = 1.0 - x;
  }
  for (int i = 0; i < 10 && x < 10.0; i++) {   /* psi(x) = psi(x + 1) - 1 / x */
    out -= 1.0 / x;
    x += 1.0;
  }
  double inv2 = 1.0 / (x * x);
  double series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
      1.0 / 240 - inv2 * (1.0 / 132)))));
  return out + ((log(x) - 0.5 / x) - series);
}
static inline double kiln_erfinv(double y) {
  if (y == 1.0) return INFINITY;
  if (y == -1.0) return -INFINITY;
  if (!(fabs(y) <= 1.0)) return NAN;
  double w = -log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    double c[] = {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941};
    double wc = w - 2.5;
    p = 2.81022636e-08;
    for (int i = 0; i < 8; i++) p = c[i] + p * wc;
  } else {
    double c[] = {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682};
    double wt = sqrt(w) - 3.0;
    p = -0.000200214257;
    for (int i = 0; i < 8; i++) p = c[i] + p * wt;
  }
  double x = p * y;
  for (int i = 0; i < 2; i++) x = x - (erf(x) - y) / (1.1283791670955126 * exp(-x * x));
  return x;
}
