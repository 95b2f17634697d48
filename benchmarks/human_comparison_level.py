"""Does `adept-eval compare` of two human-listener runs hold its level? Old method vs new.

Simulates listening tests with no difference between the two systems from the planner's
two-way logit model (``adept_eval.scoring.stats``: participant sd 1.0, question sd 1.5,
system-by-question sd 1.0 by default; 165 questions over ADEPT's 12 tasks), in two designs:

- rotated: the listening test's own (``design.plan_for``; participant i hears task j in system
  (i + j) mod 2), so every participant hears both systems on different tasks;
- one system: every participant hears all the questions in one system.

and prints the share of tests rejecting "no difference" at 5%, side by side:

- old: the pigeonhole (participants x sentences) bootstrap ``compare`` used before. By default
  its variance to the delta method's order (participants' influences within their stratum with
  n/(n - 1), questions' with q/(q - 1), plus the responses' own squares: what the old
  ``listening_test.plan._difference_and_variance`` computed and a test checked against the
  bootstrap's spread) with a normal reference; ``--bootstrap R`` runs the bootstrap itself
  (R replicates per test, percentile p as the old code: slow, minutes).
- new: ``stats.two_way_variance`` (Cameron-Gelbach-Miller two-way variance, t reference),
  what ``compare`` and the planner use now.

A rate's Monte-Carlo standard error at 1,000 tests and 5% is 0.7 points; the target is 5% +- 2%.
Each rate is printed with its exact 95% Clopper-Pearson interval over the simulated tests. The
simulated tests come from one seeded stream and the old bootstrap's resampling from another, so
both methods judge the same tests whatever ``--bootstrap`` is; ``--bootstrap R`` needs
R >= 2/0.05 = 40 (its smallest p is 2/(R + 1), which must be below 5% to reject at all).

    python benchmarks/human_comparison_level.py [--simulations 1000] [--accuracy 0.5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adept_eval.corpora import spec
from adept_eval.scoring import stats
from adept_eval.errors import run_script
from adept_eval.listening_test.plan import rotation
from adept_eval.options import arg_type

PER_SYSTEM = (5, 10, 20, 50)


def old_delta(y, tot_a, tot_b):
    """The pigeonhole bootstrap's variance to the delta method's order (the old planner's)."""
    n_a, n_b = tot_a.sum(), tot_b.sum()
    acc_a = (y * tot_a).sum((-1, -2)) / n_a
    acc_b = (y * tot_b).sum((-1, -2)) / n_b
    e = ((y * tot_a - acc_a[..., None, None] * tot_a) / n_a -
         (y * tot_b - acc_b[..., None, None] * tot_b) / n_b)
    rows, cols = e.sum(-1), e.sum(-2)
    var = (e ** 2).sum((-1, -2))
    for idx in stats.participant_strata(tot_a, tot_b):
        if idx.size > 1:
            r = rows[..., idx]
            var = var + idx.size / (idx.size - 1) * ((r - r.mean(-1, keepdims=True)) ** 2).sum(-1)
    q = cols.shape[-1]
    var = var + q / (q - 1) * ((cols - cols.mean(-1, keepdims=True)) ** 2).sum(-1)
    return acc_a - acc_b, var


def old_bootstrap_rejects(y, tot_a, tot_b, replicates, rng) -> int:
    """The old ``two_way_difference``: participants drawn within their stratum, questions
    jointly, percentile p = 2 (min(below, above) + 1) / (B + 1)."""
    strata = stats.participant_strata(tot_a, tot_b)
    people, q = tot_a.shape
    rejected = 0
    for test in y:
        cor_a, cor_b = test * tot_a, test * tot_b
        wp = np.zeros((replicates, people))
        for idx in strata:
            wp[:, idx] = rng.multinomial(idx.size, np.full(idx.size, 1 / idx.size), replicates)
        wq = rng.multinomial(q, np.full(q, 1 / q), replicates)
        diffs = (((wp @ cor_a) * wq).sum(1) / ((wp @ tot_a) * wq).sum(1) -
                 ((wp @ cor_b) * wq).sum(1) / ((wp @ tot_b) * wq).sum(1))
        below, above = np.sum(diffs <= 0), np.sum(diffs >= 0)
        rejected += min(1.0, 2 * (min(below, above) + 1) / (replicates + 1)) < 0.05
    return rejected


def level(model, per_system: int, task_sizes, *, simulations: int, seed: int,
          bootstrap: int = 0, alpha: float = 0.05) -> tuple[int, int]:
    """(old, new): how many of ``simulations`` null tests each method rejects at ``alpha``.
    The tests are drawn from one stream seeded by ``seed``, the old bootstrap's resamples from
    another, so both methods see the same tests whatever ``bootstrap`` is."""
    people, q = 2 * per_system, sum(task_sizes)
    heard = rotation(people, task_sizes, 2)
    tot_a, tot_b = (heard == 0).astype(np.float32), (heard == 1).astype(np.float32)
    mu, _ = stats.logit_locations(model, 0.0)
    data_seed, bootstrap_seed = np.random.SeedSequence(seed).spawn(2)
    rng, boot_rng = np.random.default_rng(data_seed), np.random.default_rng(bootstrap_seed)
    z = NormalDist().inv_cdf(1 - alpha / 2)
    old = new = 0
    critical = None
    chunk = max(1, 2_000_000 // (people * q))
    for start in range(0, simulations, chunk):
        m = min(chunk, simulations - start)
        u = rng.normal(0, model.participant_sd, (m, people, 1))
        v = rng.normal(0, model.question_sd, (m, 1, q))
        w_a = rng.normal(0, model.interaction_sd, (m, 1, q))
        w_b = rng.normal(0, model.interaction_sd, (m, 1, q))
        logit = mu + u + v + np.where(heard == 0, w_a, w_b)
        y = (rng.random((m, people, q)) < 1 / (1 + np.exp(-logit))).astype(np.float32)
        d, var, df = stats.two_way_variance(y * tot_a, tot_a, y * tot_b, tot_b)
        critical = critical or stats.t_quantile(1 - alpha, df)
        new += int(np.sum(np.abs(d) > critical * np.sqrt(var)))
        if bootstrap:
            old += old_bootstrap_rejects(y, tot_a, tot_b, bootstrap, boot_rng)
        else:
            d_old, var_old = old_delta(y, tot_a, tot_b)
            old += int(np.sum(np.abs(d_old) > z * np.sqrt(var_old)))
    return old, new


def rate(k: int, n: int) -> str:
    """``k``/``n`` as a percentage with its exact 95% (Clopper-Pearson) interval."""
    low, high = stats.clopper_pearson(k, n)
    return f"{k / n:.1%} [{100 * low:.1f}, {100 * high:.1f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--simulations", default=1000,
                    type=arg_type("a whole number of at least 1", whole=True, least=1))
    ap.add_argument("--accuracy", default=0.5, help="both systems' accuracy (above 0, below 1)",
                    type=arg_type("an accuracy above 0 and below 1", positive=True, most=1))
    ap.add_argument("--seed", type=arg_type("a whole number", whole=True), default=0)
    ap.add_argument("--bootstrap", default=0, metavar="R",
                    type=arg_type("0 or a whole number of replicates", whole=True, least=0),
                    help="run the old bootstrap itself with R replicates, at least 40 (default "
                         "0: its delta-method variance)")
    args = ap.parse_args(argv)
    if args.accuracy >= 1:
        ap.error(f"argument --accuracy: expected an accuracy above 0 and below 1, got "
                 f"{args.accuracy:g}")
    alpha = 0.05
    if args.bootstrap and args.bootstrap + 1 <= 2 / alpha:
        ap.error(f"argument --bootstrap: {args.bootstrap} replicates cannot reject at 5%: the "
                 f"smallest p of the percentile bootstrap is 2/(R + 1) = "
                 f"{2 / (args.bootstrap + 1):.3g}; use at least {int(2 / alpha)}")
    model = stats.ClusterModel(args.accuracy, 1.0, 1.5, 1.0)
    adept = [t.n_questions for t in spec.TASKS.values()]
    designs = (("rotated", adept), ("one system", [sum(adept)]))
    old_name = f"old (bootstrap, {args.bootstrap})" if args.bootstrap else "old (bootstrap*)"
    print(f"null rejection rate at 5% [exact 95% interval over the simulated tests], "
          f"n = {args.simulations} tests per cell, accuracy {args.accuracy:g}, {sum(adept)} "
          f"questions in {len(adept)} tasks (target 5% +- 2%)")
    print(f"{'design':<12} {'per system':>10} {old_name:>22} {'new (CGM, t)':>22}")
    started = time.perf_counter()
    for d, (name, sizes) in enumerate(designs):
        for i, n in enumerate(PER_SYSTEM):
            old, new = level(model, n, sizes, simulations=args.simulations,
                             seed=args.seed + 100 * d + i, bootstrap=args.bootstrap)
            print(f"{name:<12} {n:>10} {rate(old, args.simulations):>22} "
                  f"{rate(new, args.simulations):>22}", flush=True)
    if not args.bootstrap:
        print("* the bootstrap's variance to the delta method's order, normal reference")
    print(f"({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
