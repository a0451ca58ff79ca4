"""MXNet 1.x's `nd.random_pdf_*`: densities (or probability masses) of samples under
per-row parameters. The parameters have shape P; the samples P + (n,) (one row of
samples per parameter; Dirichlet's add the event axis K); the result has the samples'
shape (without K). Composed of registry ops (log-gamma included), so gradients reach the
samples and the parameters. As in MXNet, gamma's beta is a rate, not a scale."""
import math

from .... import np as knp
from ....npx import gammaln


def _p(param):
    """A parameter of shape P, broadcastable against samples of shape P + (n,)."""
    p = knp.asarray(param)
    return knp.expand_dims(p, -1)


def _out(log_pdf, is_log):
    return log_pdf if is_log else knp.exp(log_pdf)


def random_pdf_normal(sample, mu, sigma, is_log=False, **_):
    x, m, s = knp.asarray(sample), _p(mu), _p(sigma)
    z = (x - m) / s
    return _out(-0.5 * z * z - knp.log(s) - 0.5 * math.log(2 * math.pi), is_log)


def random_pdf_uniform(sample, low, high, is_log=False, **_):
    x, lo, hi = knp.asarray(sample), _p(low), _p(high)
    inside = (x >= lo) & (x <= hi)
    log_pdf = knp.where(inside, -knp.log(hi - lo) + x * 0, -math.inf)
    return _out(log_pdf, is_log)


def random_pdf_exponential(sample, lam, is_log=False, **_):
    x, rate = knp.asarray(sample), _p(lam)
    return _out(knp.log(rate) - rate * x, is_log)


def random_pdf_gamma(sample, alpha, beta, is_log=False, **_):
    x, a, b = knp.asarray(sample), _p(alpha), _p(beta)
    return _out(a * knp.log(b) + (a - 1) * knp.log(x) - b * x - gammaln(a), is_log)


def random_pdf_poisson(sample, lam, is_log=False, **_):
    k, rate = knp.asarray(sample), _p(lam)
    return _out(k * knp.log(rate) - rate - gammaln(k + 1), is_log)


def _nb_log(x, k, p):
    return gammaln(x + k) - gammaln(x + 1) - gammaln(k) + k * knp.log(p) + x * knp.log(1 - p)


def random_pdf_negative_binomial(sample, k, p, is_log=False, **_):
    return _out(_nb_log(knp.asarray(sample), _p(k), _p(p)), is_log)


def random_pdf_generalized_negative_binomial(sample, mu, alpha, is_log=False, **_):
    """NB with k = 1/alpha and p = 1 / (1 + alpha mu): mean mu, variance mu + alpha mu^2."""
    m, a = _p(mu), _p(alpha)
    return _out(_nb_log(knp.asarray(sample), 1 / a, 1 / (1 + a * m)), is_log)


def random_pdf_dirichlet(sample, alpha, is_log=False, **_):
    x, a = knp.asarray(sample), knp.expand_dims(knp.asarray(alpha), -2)   # P + (1, K)
    log_norm = gammaln(knp.sum(a, axis=-1)) - knp.sum(gammaln(a), axis=-1)
    return _out(log_norm + knp.sum((a - 1) * knp.log(x), axis=-1), is_log)


NAMES = [n for n in list(globals()) if n.startswith("random_pdf_")]
