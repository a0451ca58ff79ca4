"""mx.test_utils' statistical checks of random generators: the sample mean and variance
within three standard errors, and chi-square tests over buckets (SciPy, imported when a
chi-square test runs)."""
import numpy as _np


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """`nbuckets` equally likely buckets [(lo, hi), ...] from a quantile function `ppf`, and
    their probabilities."""
    if nbuckets <= 0:
        raise ValueError(f"gen_buckets_probs_with_ppf: nbuckets must be positive, got {nbuckets}")
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets)))
               for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the mean of `generator(nsamples)` lies within mu +- 3 sigma / sqrt(n)."""
    mean = _np.asarray(generator(nsamples)).mean()
    bound = 3 * sigma / _np.sqrt(nsamples)
    return bool(mu - bound < mean < mu + bound)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance of `generator(nsamples)` lies within
    sigma^2 +- 3 sqrt(2 sigma^4 / (n - 1))."""
    var = _np.asarray(generator(nsamples)).var(ddof=1)
    bound = 3 * _np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < var < sigma ** 2 + bound)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Chi-square test of `generator(nsamples)` against `probs` over `buckets` ((lo, hi)
    ranges for a continuous distribution, values for a discrete one): (p value, observed
    counts, expected counts)."""
    try:
        from scipy import stats
    except ImportError:
        raise ImportError("chi_square_check needs SciPy: pip install scipy") from None
    if not isinstance(buckets, list) or len(probs) != len(buckets):
        raise ValueError(f"chi_square_check: expected a list of buckets with one probability "
                         f"each, got {len(buckets)} buckets and {len(probs)} probabilities")
    samples = _np.asarray(generator(nsamples))
    if hasattr(samples, "asnumpy"):
        samples = samples.asnumpy()
    if isinstance(buckets[0], (list, tuple)):
        edges = _np.array([e for b in buckets for e in b], dtype=_np.float32)
        if (_np.diff(edges) < 0).any():
            raise ValueError("chi_square_check: buckets must be ascending and disjoint")
        ids = _np.searchsorted(edges, samples, side="right") // 2
        observed = _np.array([(ids == i).sum() for i in range(len(buckets))])
    else:
        observed = _np.array([(samples == b).sum() for b in buckets])
    # the expected counts scaled to the observed total: SciPy >= 1.9 requires equal sums
    # (MXNet's truncated integer counts predate that check)
    probs = _np.asarray(probs, dtype=_np.float64)
    expected = probs / probs.sum() * observed.sum()
    _, p = stats.chisquare(f_obs=observed, f_exp=expected)
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Repeat chi_square_check `nrepeat` times; fail unless at least a fraction
    `success_rate` of the p values exceed `alpha`. Returns the p values."""
    runs = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    pvalues = [r[0] for r in runs]
    if (_np.array(pvalues) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError(f"Generator test fails, Chi-square p={pvalues}, "
                             f"obs_freq={[list(r[1]) for r in runs]}, "
                             f"expected_freq={[list(r[2]) for r in runs]}.\n"
                             f"buckets={buckets}, probs={probs}")
    return pvalues
