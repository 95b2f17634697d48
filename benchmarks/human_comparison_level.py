"""Do `adept-eval compare`'s tests hold their 5% level in the designs users run? And their power?

Simulates comparisons of two systems with no true difference (the level) and with one (the
power) and prints, per scenario, the share of tests rejecting "no difference" at 5% with its
exact 95% interval over the simulated tests, beside the nominal 5%:

- people (``stats.two_way_variance``, what ``stats.two_way_difference`` computes for compare):
  ADEPT's 165 questions in 60 sentences (five per task), crowds of participants who answer
  right with their own probability - all equally skilled, two groups (0.85 and 0.50, in the
  ratio 8 to 6), logit-normal skill (sd 1.0), and the planner's two-way logit model
  (participant sd 1.0, question sd 1.5, system-by-question sd 1.0) - arriving in a random
  order or (in the rotation) the best first, 6 to 50 participants in all, in the listening
  test's rotation (participant i hears task j in system (i + j) mod 2) or one system per
  participant (alternating in arrival order). The
  column "CGM" is Cameron-Gelbach-Miller's variance with the raw cells' term, which the
  two-way test used before; "power" is the share rejecting when system A's answers are
  ``--shift`` logits better.
- ADEPT machine listeners (``stats.paired_difference``, paired by question, clustered by
  sentence): one task (5 sentences of 3 questions), a class (10) and the pool (60), with a
  sentence effect and a system-by-sentence effect; the p-value's and the interval's
  rejection rates, and how often the two disagree (never: one statistic).
- VStyle (``stats.weighted_paired_difference``, its stratified t): 33 instructions in 11
  subcategories of unequal weight in 4 categories, scores 1-5 with an instruction effect.

A rate's Monte-Carlo standard error at 1,000 tests and 5% is 0.7 points.

    python benchmarks/human_comparison_level.py [--simulations 1000] [--shift 0.5] [--part all]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adept_eval.corpora import spec
from adept_eval.errors import run_script
from adept_eval.listening_test.plan import rotation, sentence_of_questions
from adept_eval.options import arg_type
from adept_eval.scoring import stats

PARTICIPANTS = (6, 10, 14, 30, 50)
CROWDS = ("equal skill", "two groups 8:6", "logit-normal sd 1", "planner model")
ARRIVALS = ("random", "best first")
DESIGNS = ("rotated", "one system")


def logit(p):
    """The log-odds of ``p``."""
    return np.log(p / (1 - p))


def crowd_skills(crowd: str, people: int, tests: int, arrival: str, rng) -> np.ndarray:
    """Each simulated test's participants' skills on the logit scale, (tests, people).

    Args:
        crowd: One of ``CROWDS``.
        people: Participants in a test.
        tests: Simulated tests.
        arrival: "random" (a random arrival order per test) or "best first".
        rng: The random generator.

    Returns:
        The skills, in arrival order.
    """
    if crowd == "equal skill":
        return np.full((tests, people), logit(0.7))
    if crowd == "two groups 8:6":
        good = round(people * 8 / 14)
        skill = np.tile(np.r_[np.full(good, logit(0.85)), np.zeros(people - good)], (tests, 1))
    elif crowd == "logit-normal sd 1":
        skill = rng.normal(1.0, 1.0, (tests, people))
    else:
        skill = rng.normal(0.0, 1.0, (tests, people))
    if arrival == "random":
        return rng.permuted(skill, axis=1)
    return -np.sort(-skill, axis=1)


def cgm_cells_variance(cor_a, tot_a, cor_b, tot_b):
    """The two-way variance as it was: participants within A only / B only / both, sentences
    unstratified, less the raw cells' squared influences (which hold the participants' skills
    and the sentences' difficulties as well as the noise), t on min(participants - strata,
    sentences - 1) df."""
    n_a, n_b = tot_a.sum(), tot_b.sum()
    acc_a, acc_b = cor_a.sum((-1, -2)) / n_a, cor_b.sum((-1, -2)) / n_b
    e = ((cor_a - np.multiply.outer(acc_a, tot_a)) / n_a -
         (cor_b - np.multiply.outer(acc_b, tot_b)) / n_b)
    rows, cols = e.sum(-1), e.sum(-2)
    in_a, in_b = tot_a.sum(1) > 0, tot_b.sum(1) > 0
    keys = in_a * 2 + in_b
    strata = [np.flatnonzero(keys == k) for k in (1, 2, 3) if np.any(keys == k)]
    var_p = sum(idx.size / (idx.size - 1) * ((rows[..., idx] - rows[..., idx].mean(
        -1, keepdims=True)) ** 2).sum(-1) for idx in strata if idx.size > 1)
    g_s, g_c = cols.shape[-1], int(((tot_a + tot_b) > 0).sum())
    var = var_p + g_s / (g_s - 1) * (cols ** 2).sum(-1) - g_c / (g_c - 1) * (e ** 2).sum((-1, -2))
    var = np.where(var > 0, var, var_p)
    return acc_a - acc_b, var, min(sum(i.size for i in strata) - len(strata), g_s - 1)


def people_rates(crowd: str, arrival: str, design: str, people: int, *, tests: int,
                 shift: float, seed: int) -> tuple[int, int, int]:
    """(null rejections, null rejections by the old CGM variance, rejections with system A
    ``shift`` logits better) out of ``tests`` simulated listening tests each."""
    sizes = [t.n_questions for t in spec.TASKS.values()]
    q = sum(sizes)
    heard = (rotation(people, sizes, 2) if design == "rotated"
             else np.repeat((np.arange(people) % 2)[:, None], q, 1))
    sentence = sentence_of_questions(sizes)
    columns = (sentence[:, None] == np.unique(sentence)[None, :]).astype(np.float32)
    in_a, in_b = (heard == 0).astype(np.float32), (heard == 1).astype(np.float32)
    tot_a, tot_b = in_a @ columns, in_b @ columns
    rng = np.random.default_rng(seed)
    counts = [0, 0, 0]
    chunk = max(1, 1_500_000 // (people * q))
    for start in range(0, tests, chunk):
        m = min(chunk, tests - start)
        skill = crowd_skills(crowd, people, m, arrival, rng)[:, :, None]
        effects = 0.0
        if crowd == "planner model":
            effects = (rng.normal(0, 1.5, (m, 1, q)) +
                       np.where(heard == 0, rng.normal(0, 1.0, (m, 1, q)),
                                rng.normal(0, 1.0, (m, 1, q))))
        noise = rng.random((m, people, q))
        for k, better in ((0, 0.0), (2, shift)):
            y = (noise < stats.expit(skill + effects + better * (heard == 0))).astype(np.float32)
            cor_a, cor_b = (y * in_a) @ columns, (y * in_b) @ columns
            d, var, df = stats.two_way_variance(cor_a, tot_a, cor_b, tot_b)
            counts[k] += int(np.sum(np.abs(d) > stats.t_quantile(0.95, df) * np.sqrt(var)))
            if k == 0:
                d, var, df = cgm_cells_variance(cor_a, tot_a, cor_b, tot_b)
                counts[1] += int(np.sum(np.abs(d) > stats.t_quantile(0.95, df) * np.sqrt(var)))
    return counts[0], counts[1], counts[2]


def machine_rates(sentences: int, *, tests: int, seed: int) -> tuple[int, int, int]:
    """(p < 0.05, interval excluding 0, the two disagreeing) out of ``tests`` machine-listener
    comparisons with no true difference over ``sentences`` sentences of 3 questions each."""
    rng = np.random.default_rng(seed)
    clusters = np.repeat(np.arange(sentences), 3)
    by_p = by_interval = disagree = 0
    for _ in range(tests):
        base = rng.normal(0.5, 1.0, sentences)[clusters] + rng.normal(0, 0.5, clusters.size)
        a = rng.random(clusters.size) < stats.expit(
            base + rng.normal(0, 1.0, sentences)[clusters])
        b = rng.random(clusters.size) < stats.expit(
            base + rng.normal(0, 1.0, sentences)[clusters])
        d = stats.paired_difference(a.astype(float), b.astype(float), clusters,
                                    bounds=(-1.0, 1.0))
        p_says, interval_says = d.p_value < 0.05, not d.ci_low <= 0 <= d.ci_high
        by_p += p_says
        by_interval += interval_says
        disagree += p_says != interval_says
    return by_p, by_interval, disagree


def vstyle_rates(*, tests: int, shift: float, seed: int) -> tuple[int, int]:
    """(null rejections, rejections with A ``shift`` points better) out of ``tests`` VStyle
    comparisons: 33 instructions in 11 subcategories (weights 1-3) of 4 categories."""
    rng = np.random.default_rng(seed)
    strata = np.repeat([f"c{i % 4}/s{i}" for i in range(11)], 3)
    weights = {s: 1.0 + (i % 3) for i, s in enumerate(sorted(set(strata)))}
    groups = {s: s.split("/")[0] for s in weights}
    out = [0, 0]
    for _ in range(tests):
        item = rng.normal(3.0, 1.0, strata.size)
        for k, better in ((0, 0.0), (1, shift)):
            a = np.clip(np.rint(item + better + rng.normal(0, 1.0, strata.size)), 1, 5)
            b = np.clip(np.rint(item + rng.normal(0, 1.0, strata.size)), 1, 5)
            d = stats.weighted_paired_difference(a, b, strata, weights, groups,
                                                 bounds=(-4.0, 4.0))
            out[k] += d.p_value < 0.05
    return out[0], out[1]


def rate(k: int, n: int) -> str:
    """``k``/``n`` as a percentage with its exact 95% (Clopper-Pearson) interval."""
    low, high = stats.clopper_pearson(k, n)
    return f"{k / n:.1%} [{100 * low:.1f}, {100 * high:.1f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--simulations", default=1000,
                    type=arg_type("a whole number of at least 1", whole=True, least=1))
    ap.add_argument("--shift", default=0.5, help="system A's advantage for the power, logits",
                    type=arg_type("a positive number of logits", positive=True))
    ap.add_argument("--seed", type=arg_type("a whole number", whole=True), default=0)
    ap.add_argument("--part", choices=("people", "machine", "vstyle", "all"), default="all")
    args = ap.parse_args(argv)
    n, started = args.simulations, time.perf_counter()
    print(f"rejections of 'no difference' at nominal 5% [exact 95% interval], n = {n} "
          f"simulated tests per row (the level: 2-7% is the target)")
    if args.part in ("people", "all"):
        print(f"\npeople: ADEPT's 165 questions in 60 sentences; power with A +{args.shift:g} "
              f"logits")
        print(f"{'crowd':<18} {'arrival':<10} {'design':<10} {'people':>6} "
              f"{'two-way (now)':>20} {'CGM (before)':>20} {'power':>20}")
        row = 0
        for crowd in CROWDS:
            for arrival in ARRIVALS[:1] if crowd == "equal skill" else ARRIVALS:
                # sorted arrival over one system per participant assigns the systems by
                # rank, not at random: no test of sampling speaks to that
                for design in DESIGNS if arrival == "random" else DESIGNS[:1]:
                    for people in PARTICIPANTS:
                        row += 1
                        now, before, power = people_rates(crowd, arrival, design, people,
                                                          tests=n, shift=args.shift,
                                                          seed=args.seed + row)
                        print(f"{crowd:<18} {arrival:<10} {design:<10} {people:>6} "
                              f"{rate(now, n):>20} {rate(before, n):>20} "
                              f"{rate(power, n):>20}", flush=True)
    if args.part in ("machine", "all"):
        print("\nADEPT machine listener, paired by question, 3 questions a sentence")
        print(f"{'row':<10} {'sentences':>9} {'p < 0.05':>20} {'interval excludes 0':>20} "
              f"{'disagree':>20}")
        for i, (name, sentences) in enumerate((("one task", 5), ("a class", 10),
                                               ("pooled", 60))):
            by_p, by_interval, disagree = machine_rates(sentences, tests=n,
                                                        seed=args.seed + 1000 + i)
            print(f"{name:<10} {sentences:>9} {rate(by_p, n):>20} {rate(by_interval, n):>20} "
                  f"{rate(disagree, n):>20}", flush=True)
    if args.part in ("vstyle", "all"):
        null, power = vstyle_rates(tests=n, shift=1.0, seed=args.seed + 2000)
        print(f"\nVStyle, 33 instructions in 11 weighted subcategories: level {rate(null, n)}, "
              f"power with A +1 point {rate(power, n)}")
    print(f"({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
