"""Statistics of scores: bootstrap confidence intervals, pass@k, majority@k, McNemar's exact test.

Pure functions of numbers (no run, no file), so every figure is recomputable from the run store.
Bootstraps use a fixed seed (`SEED`) and a fixed number of resamples (`RESAMPLES`): the same
scores always give the same interval.

- `bootstrap_ci(per_task)`: 95 % percentile interval of the mean score. `per_task` holds, for each
  task, the scores of its repeats. Tasks are resampled with replacement; when tasks have several
  repeats, each resampled task's repeats are resampled too (a two-level bootstrap), so the interval
  covers both the choice of tasks and the sampling noise of the agent. The draws are made per group of tasks
  with the same scores (multinomial counts), which is the same distribution as drawing task by task and costs
  resamples x groups, so a 100k-episode run takes well under a second.
- `pass_at_k(n, c, k)`: the unbiased estimator of Chen et al. 2021 ("Evaluating Large Language
  Models Trained on Code", eq. 1): 1 - C(n-c, k) / C(n, k), the chance that at least one of k
  samples drawn without replacement from the n repeats is correct.
- `majority_at_k(answers, k)`: the answer given most often in the first k repeats (ties go to the
  earliest repeat) and whether it was judged correct.
- `cohen_kappa(a, b)`: Cohen's kappa of two raters' yes/no decisions on the same items (Cohen 1960):
  (p_o - p_e) / (1 - p_e), p_e from each rater's own rate of "yes". Raters of different item counts are an error
  (ValueError); None when undefined (no items, or both raters constant and equal: p_e = 1). Not rounded.
- `fleiss_kappa(ratings)`: Fleiss' kappa (Fleiss 1971) of items each rated yes/no by the same number (>= 2) of
  raters; None for no items or when undefined (p_e = 1); a ragged table is a ValueError.
- `mcnemar_exact(b, c)`: two-sided exact McNemar test on the discordant pairs (b: only A correct,
  c: only B correct): p = min(1, 2 * P[X <= min(b, c)]) with X ~ Binomial(b + c, 1/2).
"""

from __future__ import annotations

from math import comb, floor
from typing import Hashable, Sequence

import numpy as np
from numpy.random import Generator, default_rng  # (numpy loads its random module on first use otherwise)

SEED = 0
RESAMPLES = 1000
MAX_TYPES = 256
LEVEL = 0.95


def _percentiles(means: np.ndarray, level: float) -> tuple[float, float]:
    """The central `level` interval of `means`: `np.quantile(means, [tail, 1 - tail])` (its default "linear" rule),
    computed from the sorted means with numpy's very arithmetic (np.quantile's first use imports numpy.ma, ~11 ms)."""
    tail = (1.0 - level) / 2.0
    ordered = np.sort(means)
    return linear_quantile(ordered, tail), linear_quantile(ordered, 1.0 - tail)


def linear_quantile(ordered: np.ndarray, q: float) -> float:
    """`np.quantile(values, q)` of `ordered`, the values sorted (NaN last, as np.sort puts them): numpy's "linear"
    rule (Hyndman and Fan's 7th) with its operations in its order, so the float is the same to the last bit (the
    sign of a zero too, unless both -0.0 and 0.0 are among the values: equal, either may come first)."""
    n = len(ordered)
    if np.isnan(ordered[-1]):
        return float("nan")
    index = (n - 1) * q  # numpy's virtual index for "linear"
    if index >= n - 1:  # numpy takes the last value twice, its weight from a "previous index" of -1
        below, above, t = n - 1, n - 1, index + 1
    elif index < 0:
        below, above, t = 0, 0, index
    else:
        below = floor(index)
        above, t = below + 1, index - below
    a, b = float(ordered[below]), float(ordered[above])
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def bootstrap_ci(per_task: Sequence[Sequence[float]], level: float = LEVEL, resamples: int = RESAMPLES,
                 seed: int = SEED) -> tuple[float, float] | None:
    """95 % interval (as fractions) of the mean over tasks of each task's mean repeat score; None without tasks.

    Computed exactly but without drawing task by task: tasks with the same multiset of scores are one "type";
    resampling T tasks with replacement draws type counts N ~ Multinomial(T, type frequencies), and resampling the
    r repeats of each of the N picked tasks of a type draws N*r scores from that type's scores, i.e. counts of its
    distinct values ~ Multinomial(N*r, their frequencies). Cost: resamples x types x distinct values."""
    tasks = [tuple(sorted(map(float, scores))) for scores in per_task if len(scores)]
    if not tasks:
        return None
    kinds: dict[tuple[float, ...], int] = {}
    for key in tasks:
        kinds[key] = kinds.get(key, 0) + 1
    keys = list(kinds)
    rng = default_rng(seed)
    if len(keys) > MAX_TYPES:
        return _percentiles(_direct(tasks, rng, resamples), level)
    picked = rng.multinomial(len(tasks), np.array([kinds[k] for k in keys]) / len(tasks), size=resamples)
    sums = np.zeros(resamples)
    for j, key in enumerate(keys):
        values, counts = np.unique(np.array(key), return_counts=True)
        repeats = len(key)
        if len(values) == 1:
            sums += picked[:, j] * values[0]
            continue
        draws = rng.multinomial(picked[:, j] * repeats, counts / repeats)
        sums += draws @ values / repeats
    return _percentiles(sums / len(tasks), level)


def _direct(tasks: list[tuple[float, ...]], rng: Generator, resamples: int) -> np.ndarray:
    """The same bootstrap drawn task by task (for many distinct score multisets, e.g. paired differences)."""
    width = max(len(t) for t in tasks)
    sizes = np.array([len(t) for t in tasks])
    matrix = np.zeros((len(tasks), width))
    for i, scores in enumerate(tasks):
        matrix[i, :len(scores)] = scores
    means = np.empty(resamples)
    chunk = max(1, 4_000_000 // (len(tasks) * width))
    for start in range(0, resamples, chunk):
        n = min(chunk, resamples - start)
        picked = rng.integers(0, len(tasks), size=(n, len(tasks)))
        if width == 1:
            task_means = matrix[picked, 0]
        else:
            draws = (rng.random(size=(n, len(tasks), width)) * sizes[picked][..., None]).astype(int)
            values = np.take_along_axis(matrix[picked], draws, axis=2)
            used = np.arange(width)[None, None, :] < sizes[picked][..., None]
            task_means = (values * used).sum(axis=2) / sizes[picked]
        means[start:start + n] = task_means.mean(axis=1)
    return means


def paired_bootstrap_ci(differences: Sequence[float], level: float = LEVEL, resamples: int = RESAMPLES,
                        seed: int = SEED) -> tuple[float, float] | None:
    """95 % interval of the mean of per-task differences (tasks resampled with replacement)."""
    return bootstrap_ci([[d] for d in differences], level, resamples, seed)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k of the n samples (c of them correct) is correct (Chen et al. 2021)."""
    if not 0 < k <= n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def majority_at_k(answers: Sequence[tuple[Hashable, bool]], k: int) -> bool:
    """Whether the most frequent answer of the first k `(answer, correct)` pairs is correct (ties: earliest)."""
    first = list(answers)[:k]
    counts: dict[Hashable, int] = {}
    for answer, _ in first:
        counts[answer] = counts.get(answer, 0) + 1
    best = max(counts.values())
    winner = next(a for a, _ in first if counts[a] == best)
    return next(ok for a, ok in first if a == winner)


def ks_for(n: int) -> list[int]:
    """The k reported for n repeats: every k up to 10, then powers of two, and n itself."""
    if n <= 10:
        return list(range(1, n + 1))
    return sorted({k for k in (1, 2, 4, 8, 16, 32, 64) if k < n} | {n})


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (1.0 when there are none)."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2.0 * tail)


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two raters' yes/no decisions (see the module docstring for the contract)."""
    if len(a) != len(b):
        raise ValueError(f"both raters must rate the same items ({len(a)} != {len(b)})")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def fleiss_kappa(ratings: Sequence[Sequence[bool]]) -> float | None:
    """Fleiss' kappa of items each rated by the same number (>= 2) of raters into yes/no (see the module
    docstring)."""
    if not ratings:
        return None
    raters = len(ratings[0])
    if raters < 2 or any(len(r) != raters for r in ratings):
        raise ValueError("Fleiss' kappa needs every item rated by the same number (at least 2) of raters")
    items = len(ratings)
    yes = [sum(r) for r in ratings]
    counts = [(y, raters - y) for y in yes]
    p_yes = sum(yes) / (items * raters)
    expected = p_yes ** 2 + (1 - p_yes) ** 2
    observed = sum((a * a + b * b - raters) / (raters * (raters - 1)) for a, b in counts) / items
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)
