"""A state's samples as numbers: its level (the median), the noise of one sample (the pooled Shamos
estimator), standard errors, the separation of two states, and odds in words. Pure statistics, no
verdict: the judges (hourly.analysis.judges) decide on these."""

from __future__ import annotations

import functools
import math
from typing import Iterable, Sequence, Union

import numpy as np

# the noise floor and prior are detection's: one definition, so a step and its bisection agree
from hourly.analysis.detect import NOISE_FLOOR_RELATIVE, PRIOR_RELATIVE_NOISE, overflow_scale

#: samples of one state, as a list or an array
Samples = Union[Sequence[float], np.ndarray]


#: σ of one sample from the pooled Shamos estimator: the median of every within-state pairwise
#: |difference| over √2·Φ⁻¹(¾) (consistent at every group size; a quarter of wild runs moves it little)
SHAMOS = 1.0 / (math.sqrt(2.0) * 0.6744897501960817)
#: Standard error of the median of n ≥ 3 samples, in σ/√n (Gaussian noise: √(π/2)); 1 for n ≤ 2,
#: where it is the mean.
MEDIAN_SE = math.sqrt(math.pi / 2.0)
#: The predictive of a location of n runs is a Student-t with at most TAIL_DOF·n degrees of freedom:
#: one run's tail is heavy (a slow run, a busy machine), a location of many runs' nearly Gaussian.
#: So a single wild run cannot give the odds of many runs.
TAIL_DOF = 3


def location(x: Samples) -> float:
    """A state's level from its samples: the median, which half of the runs less one can be slow
    without carrying it away (a mean follows every slow run); the mean for one or two samples.
    Values near the float's limit (1e308) are averaged scaled (:func:`overflow_scale`)."""
    a = np.asarray(x, dtype=float)
    k = overflow_scale(a)
    return float(np.median(a * k)) / k


def hodges_lehmann(x: Samples) -> float:
    """The Hodges–Lehmann location: the median of every Walsh average (xᵢ + xⱼ)/2, i ≤ j — the
    signed-rank test's estimate. As robust to a few wild values as a median of a third of them,
    and nearly as efficient as the mean on Gaussian noise (95 %): for paired, drift-cancelled
    values (hourly.analysis.paired), where the median's 64 % would cost half as many rounds again."""
    a = np.asarray(x, dtype=float)
    k = overflow_scale(a)  # Walsh averages of values near 1e308: of the scaled values (exact)
    a = a * k
    if len(a) <= 2:
        return float(a.mean()) / k
    i, j = _pairs(len(a), 0)
    return float(np.median((a[i] + a[j]) / 2.0)) / k


@functools.lru_cache(maxsize=64)
def _pairs(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(n, k)``, made once per size (read-only): the verdicts ask for the same few
    sizes on every round."""
    i, j = np.triu_indices(n, k)
    i.flags.writeable = j.flags.writeable = False
    return i, j


#: Standard error of the Hodges–Lehmann location of n ≥ 3 values, in σ/√n (Gaussian: √(π/3)).
HL_SE = math.sqrt(math.pi / 3.0)


def location_se(n: int) -> float:
    """The standard error of :func:`location` of ``n`` samples, in units of one sample's σ."""
    return (1.0 if n <= 2 else MEDIAN_SE) / math.sqrt(max(n, 1))


def tail_dof(dof: int, n: int) -> int:
    """Degrees of freedom of the predictive of a location of ``n`` runs on a noise estimate with
    ``dof``: at most ``TAIL_DOF·n`` (heavy-tailed for a single run), and ``TAIL_DOF·n`` on a prior."""
    cap = TAIL_DOF * max(n, 1)
    return cap if dof <= 0 else min(dof, cap)


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values)
    v, w = values[order], weights[order]
    c = np.cumsum(w)
    return float(v[np.searchsorted(c, c[-1] / 2.0)])


def pooled_sigma(groups: Iterable[Samples]) -> tuple[float | None, int]:
    """One sample's σ pooled over the groups (None without any repeated group) and its degrees of
    freedom, robustly: the pooled Shamos estimator (:data:`SHAMOS` × the median of every
    within-group pairwise |difference|, each group weighing as its n−1 degrees of freedom). A few
    slow runs do not inflate it, as they inflate a standard deviation."""
    diffs, weights, dof = [], [], 0
    for group in groups:
        g = np.asarray(group, dtype=float)
        if len(g) >= 2:
            i, j = _pairs(len(g), 1)
            diffs.append(np.abs(g[i] - g[j]))
            weights.append(np.full(len(i), 2.0 / len(g)))
            dof += len(g) - 1
    if not dof:
        return None, 0
    return SHAMOS * _weighted_median(np.concatenate(diffs), np.concatenate(weights)), dof


def noise(good: Samples, bad: Samples,
          probe: Samples = ()) -> float:
    """The σ of one sample: pooled over the groups (robustly), floored, or a prior."""
    level = float(np.median(np.abs(np.concatenate([np.asarray(good, float), np.asarray(bad, float)]))))
    s, _ = pooled_sigma([good, bad, probe])
    floor = max(NOISE_FLOOR_RELATIVE * level, 1e-12)
    return max(s if s is not None else PRIOR_RELATIVE_NOISE * level, floor)



def se(sigma: float, x: Samples, hl: bool = False) -> float:
    """The standard error of ``x``'s location: on the pooled σ, or on ``x``'s own scatter when that
    is wider (a state whose runs are wild is not judged on the calm states' noise). ``hl``: of its
    Hodges–Lehmann location (:func:`hodges_lehmann`), not its median."""
    own = pooled_sigma([x])[0] if len(x) >= 3 else None
    n = len(x)
    factor = (HL_SE if n >= 3 else 1.0) / math.sqrt(max(n, 1)) if hl else location_se(n)
    return max(sigma, own or 0.0) * factor


def se2(sigma: float, x: Samples, y: Samples, hl: bool = False) -> float:
    """The standard error of the difference of ``x``'s and ``y``'s locations."""
    return math.hypot(se(sigma, x, hl), se(sigma, y, hl))


def separation(good: Sequence[float], bad: Sequence[float]) -> float:
    """How many standard errors apart the two ends' locations (:func:`location`) are."""
    s = noise(good, bad)
    return abs(location(bad) - location(good)) / se2(s, good, bad)



def lognorm(x: np.ndarray, mean: float, var: float) -> np.ndarray:
    return -0.5 * (np.log(2 * math.pi * var) + (x - mean) ** 2 / var)


def odds(llr: float) -> str:
    """A log-likelihood ratio as the odds it stands for, for people: ``20:1`` for the likelier
    level against the other."""
    x = math.exp(min(abs(llr), 50.0))
    return f"{x:,.0f}:1" if x < 1e6 else "over 1,000,000:1"


def logpdf(x: float, loc: float, scale: float, dof: int) -> float:
    """The log density at ``x`` of Student's t with ``dof`` degrees of freedom (a normal without
    any), shifted by ``loc`` and scaled by ``scale``: scipy.stats.t.logpdf's formula, written out
    because scipy's per-call argument handling cost ~50 times the arithmetic (~5 s of a test run)."""
    if dof > 0:
        z = (x - loc) / scale
        return (math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)
                - (dof + 1) / 2 * math.log1p(z * z / dof) - math.log(scale))
    return float(lognorm(np.array([x]), loc, scale ** 2)[0])

