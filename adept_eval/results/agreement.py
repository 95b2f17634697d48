"""How far an automatic listener's answers agree with people's, on the same systems' samples.

A listening test's answers scored through lm-eval (the ``human`` listener, ``--log_samples``) are
one run per system, each question carrying every participant's chosen letter. An automatic
listener's run of the same system answers the same questions once. Set side by side, question
by question:

- **agreement with each person**: the share of people's answers that the listener's answer
  matches (a participant who answered nothing is a response it cannot match; a listener's
  failed question matches nobody). Its 95% interval and test against chance allow for both ways
  the answers cluster, by participant and by sentence (``stats.two_way_proportion``). Chance is
  what a listener answering at random would reach, 1 / choices whatever people chose, averaged
  over the answers;
- **agreement with the majority**: the share of questions where the listener's answer is the
  people's most frequent one (a tie of k answers credits each 1/k, so chance is again
  1 / choices), with Korn and Graubard's interval and test clustered by sentence
  (``stats.clustered_proportion``);
- **people with people**: how often two participants' answers to a question match, the
  agreement a listener answering like one more participant would reach with each person (its
  interval clusters by sentence only);
- each side's accuracy over the same questions.

Across systems, each listener's ranking of them is set against people's: Kendall's tau-b
between the systems' accuracies by people and by the listener, with a 95% percentile interval
from a bootstrap that resamples participants and sentences together (the same draw for every
system, so the people who heard several systems and the sentences all systems share move
together), and the exact permutation p-value of the systems' order (k systems give at best
p = 1 / k!, so a ranking of two or three systems shows nothing by itself; the verdict says so).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from adept_eval.errors import AgreementError
from adept_eval.identity import label, scorer_key
from adept_eval.results.runs import Run, find_runs, logged_samples, samples_mismatch
from adept_eval.scoring import stats
from adept_eval.suites import SUITES

SEED = 0
REPLICATES = 2000
LEVEL = 0.05


@dataclass(frozen=True)
class Answered:
    """One question of one run: who chose what (people), or the listener's one choice."""

    question_id: str
    task: str
    sentence: str  # speaker and sentence: the cluster a question belongs to
    chance: float  # 1 / choices
    correct_answer: str
    failed: int
    #: (participant, chosen letter or None for no valid choice) per response; a machine
    #: listener's one answer has the participant ""
    choices: tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class Source:
    """One set of answers taken for the comparison: whose (people, or a listener) to which
    system's samples, from an lm-eval run or a listening test's responses file."""

    path: Path  # the results file, or the responses file
    system: str
    people: bool
    listener: str  # the scorer's label ("human" for people)
    key: str  # equal exactly when two sources' scorers are
    tasks: tuple[str, ...]
    corpus_sha256: str
    when: float
    run: Run | None = None  # None: a responses file, read whole into ``answers``
    answers: dict | None = None  # question id -> Answered, for a responses file


# ----------------------------------------------------------------------------- reading
def _adept_tasks(run: Run) -> list[str]:
    return [t for t in run.task_names() if t in SUITES["adept"].tasks]


def _source(run: Run) -> Source:
    """What one run is: people's or a listener's answers, and of which system.

    Raises:
        AgreementError: the run has no ADEPT task or records no adept-eval identity.
    """
    if not _adept_tasks(run):
        raise AgreementError(f"{run.results_path}: no ADEPT task in this run")
    recorded = run.suite("adept")
    if recorded is None:
        raise AgreementError(f"{run.results_path}: the run records no adept-eval identity, so "
                             "who answered (people or which listener) and on which corpus "
                             "cannot be told; run it again")
    people = bool(recorded.people)
    return Source(run.results_path, run.system, people,
                  "human" if people else label(recorded.scorer),
                  "human" if people else scorer_key(recorded.scorer), tuple(_adept_tasks(run)),
                  recorded.corpus_sha256, run.when, run=run)


def responses_source(system: str, path: str | Path, corpus) -> Source:
    """People's answers to one system read straight from a listening test's responses file
    (``listening-test export``, or any file the ``human`` listener reads).

    Args:
        system: the system the file's answers are about (the name its listener runs carry).
        path: the responses file.
        corpus: the corpus the questions come from (``Corpus``).

    Returns:
        The people's answers, every question that has any.

    Raises:
        ResponsesError: the file cannot be read, or a row is unusable (the message lists them).
        AgreementError: the file answers no question of the corpus.
    """
    from adept_eval.corpora.questions import LETTERS, all_questions
    from adept_eval.scoring.listeners.human import HumanListener

    path = Path(path)
    reader = HumanListener(responses=str(path), corpus=corpus)
    answers: dict[str, Answered] = {}
    for task, questions in all_questions(corpus).items():
        for q in questions:
            given = reader.answer(q, {}).responses
            if given:
                answers[q.question_id] = Answered(
                    q.question_id, task, f"{q.speaker}_{q.sentence_id}", 1.0 / q.n_choices,
                    q.answer_letter, 0, tuple((r.participant, LETTERS[r.choice]
                                               if r.choice is not None else None)
                                              for r in given))
    if not answers:
        raise AgreementError(f"{path}: no responses to any question of the corpus")
    return Source(path, system, True, "human", "human",
                  tuple(sorted({a.task for a in answers.values()})), corpus.fingerprint,
                  path.stat().st_mtime, answers=answers)


def _record(sample: dict) -> dict:
    record = sample["acc"]
    return record[0] if isinstance(record, list) else record


def _choices(record: dict, people: bool, where: str) -> tuple[tuple[str, str | None], ...]:
    """Who chose which letter in one question's record.

    Raises:
        AgreementError: a people's record whose chosen letters are not one per participant.
    """
    answers = [a if a else None for a in record.get("answer") or ()]
    if not people:
        return (("", answers[0] if answers and not int(record.get("failed") or 0) else None),)
    who = [str(r[0]) for r in record.get("responses") or ()]
    if len(who) != len(answers) or len(who) != int(record.get("n") or 0):
        raise AgreementError(
            f"{where}: question {record.get('question_id')} records {len(answers)} chosen "
            f"letters for {len(who)} participants of {record.get('n')} responses; agreement "
            "needs each participant's choice: score the listening test's answers again with "
            "this adept-eval (lm_eval ... --log_samples --metadata listener=human ...)")
    return tuple(zip(who, answers))


def answered(source: Source, tasks: list[str] | None = None) -> dict[str, Answered]:
    """question id -> what was answered, from one run's logged samples.

    Args:
        source: the run.
        tasks: the tasks to read (default: every ADEPT task of the run).

    Returns:
        Every logged question of those tasks.

    Raises:
        AgreementError: the run logged no samples, a task's samples are missing or do not
            match its results, or a line is not an adept-eval record; each names the file.
    """
    run = source.run
    if run is None:  # a responses file, read whole
        return {k: a for k, a in (source.answers or {}).items()
                if not tasks or a.task in tasks}
    tasks = tasks or _adept_tasks(run)
    if not run.samples:
        raise AgreementError(f"{run.results_path}: no logged samples beside it; agreement "
                             "needs each question's answers: rerun lm_eval with --log_samples")
    lost = [t for t in tasks if t not in run.samples]
    if lost:
        raise AgreementError(f"{run.results_path}: no logged samples for {', '.join(lost)}; "
                             "rerun lm_eval with --log_samples")
    why = samples_mismatch(run, tasks)
    if why:
        raise AgreementError(f"{run.results_path}: {why}; rerun lm_eval with --log_samples")
    out: dict[str, Answered] = {}
    for task in tasks:
        for line_no, sample in logged_samples(run.samples[task]):
            where = f"{run.samples[task]}:{line_no}"
            try:
                record, doc = _record(sample), sample["doc"]
                q = Answered(question_id=str(record["question_id"]), task=task,
                             sentence=f"{doc['speaker']}_{doc['sentence_id']}",
                             chance=float(record["chance"]),
                             correct_answer=str(record["correct_answer"]),
                             failed=int(record.get("failed") or 0),
                             choices=_choices(record, source.people, where))
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                if isinstance(exc, AgreementError):
                    raise
                raise AgreementError(f"{where}: not an adept-eval sample record "
                                     f"({type(exc).__name__}: {exc})") from None
            out[q.question_id] = q
    return out


# ----------------------------------------------------------------------------- the figures
def majority_credit(people: Answered, machine: str | None) -> float:
    """How far a listener's answer is the people's most frequent one.

    Args:
        people: the people's answers to the question.
        machine: the listener's letter (None: it gave none).

    Returns:
        1 / k when it is one of the k most frequent answers (blank answers left out), else 0.
    """
    counts = Counter(c for _, c in people.choices if c is not None)
    if machine is None or not counts:
        return 0.0
    top = max(counts.values())
    modes = [c for c, k in counts.items() if k == top]
    return 1.0 / len(modes) if machine in modes else 0.0


def matching_pairs(people: Answered) -> tuple[int, int]:
    """How often two people's answers to one question match.

    Args:
        people: the people's answers to the question.

    Returns:
        (ordered pairs of two different participants whose answers are the same letter, ordered
        pairs); a blank answer matches nobody.
    """
    m = len(people.choices)
    counts = Counter(c for _, c in people.choices if c is not None)
    return sum(k * (k - 1) for k in counts.values()), m * (m - 1)


def _machine_letter(q: Answered) -> str | None:
    return q.choices[0][1] if q.choices else None


def _proportion(p: stats.ClusteredProportion, chance: float, n: int) -> dict:
    return {"agreement": p.acc, "ci_low": p.ci_low, "ci_high": p.ci_high, "p_chance": p.p_value,
            "chance": chance, "n": n, "df": p.df, "method": p.method}


def cell(people: dict[str, Answered], machine: dict[str, Answered], keys: list[str]) -> dict:
    """Agreement and accuracies over the questions ``keys`` that both runs answered.

    Args:
        people: the people's run's questions.
        machine: the listener's run's questions.
        keys: the question ids to pool (each with at least one person's response).

    Returns:
        ``questions``, ``sentences``, ``responses``, ``participants``, ``failed`` (the
        listener's failed questions, matching nobody), ``acc_people`` and ``acc_machine`` with
        their 95% intervals (``acc_*_ci``: people's two-way over participants and sentences,
        the listener's clustered by sentence),
        ``per_participant`` and ``majority`` (each agreement with its interval, p against
        chance, chance and n), and ``people_with_people``: how often two participants' answers to
        a question match, the figure ``per_participant`` is read against.
    """
    sentence = {k: people[k].sentence for k in keys}
    trials, chances = [], []
    for k in keys:
        mine = _machine_letter(machine[k])
        for who, chosen in people[k].choices:
            trials.append(stats.Trial(who, k, mine is not None and chosen == mine))
            chances.append(people[k].chance)
    chance_r = float(np.mean(chances)) if chances else math.nan
    per_person = stats.two_way_proportion(trials, sentence, null=chance_r)
    credits = [majority_credit(people[k], _machine_letter(machine[k])) for k in keys]
    chance_q = float(np.mean([people[k].chance for k in keys]))
    majority = stats.clustered_proportion(credits, [1.0] * len(keys),
                                          [sentence[k] for k in keys], null=chance_q)
    right_trials = [stats.Trial(who, k, chosen == people[k].correct_answer)
                    for k in keys for who, chosen in people[k].choices]
    acc_people = stats.two_way_proportion(right_trials, sentence)
    machine_right = [float(_machine_letter(machine[k]) == machine[k].correct_answer)
                     for k in keys]
    acc_machine = stats.clustered_proportion(machine_right, [1.0] * len(keys),
                                             [sentence[k] for k in keys])
    pairs = [matching_pairs(people[k]) for k in keys]
    with_each_other = stats.clustered_proportion([a for a, _ in pairs], [b for _, b in pairs],
                                                 [sentence[k] for k in keys])
    return {
        "questions": len(keys), "sentences": len(set(sentence.values())),
        "responses": len(trials), "participants": len({t.participant for t in trials}),
        "failed": sum(machine[k].failed for k in keys),
        "acc_people": acc_people.acc, "acc_people_ci": [acc_people.ci_low, acc_people.ci_high],
        "acc_machine": acc_machine.acc,
        "acc_machine_ci": [acc_machine.ci_low, acc_machine.ci_high],
        "per_participant": _proportion(per_person, chance_r, len(trials)),
        "majority": _proportion(majority, chance_q, len(keys)),
        "people_with_people": {
            "agreement": with_each_other.acc, "ci_low": with_each_other.ci_low,
            "ci_high": with_each_other.ci_high, "pairs": with_each_other.n,
            "method": "ordered pairs of participants answering one question alike; "
                      "Korn-Graubard interval clustered by sentence (the pairs share "
                      "participants too, so it is narrower than a two-way interval would be)"},
    }


def system_agreement(people: dict[str, Answered], machine: dict[str, Answered]) -> dict:
    """One listener against people on one system: pooled over the shared questions, and per
    task.

    Args:
        people: the people's run's questions.
        machine: the listener's run's questions.

    Returns:
        ``pooled`` and ``tasks`` (task -> ``cell``), plus ``keys`` (the shared questions) and
        ``only_people``/``only_machine`` (questions in one run only, left out).
    """
    keys = sorted(k for k in set(people) & set(machine) if people[k].choices)
    if not keys:
        return {"pooled": {}, "tasks": {}, "keys": [], "only_people": len(people),
                "only_machine": len(machine)}
    by_task: dict[str, list[str]] = defaultdict(list)
    for k in keys:
        by_task[people[k].task].append(k)
    return {"pooled": cell(people, machine, keys),
            "tasks": {t: cell(people, machine, ks) for t, ks in sorted(by_task.items())},
            "keys": keys,
            "only_people": len(set(people) - set(machine)),
            "only_machine": len(set(machine) - set(people))}


# ----------------------------------------------------------------------------- systems' ranking
def kendall_tau_b(x, y) -> float:
    """Kendall's tau-b of two equally long sequences (nan when either is constant or shorter
    than two), by scipy.

    Args:
        x: the first figures.
        y: the second figures, in the same order.

    Returns:
        (concordant - discordant) / sqrt((pairs - ties in x)(pairs - ties in y)).
    """
    import warnings

    from scipy.stats import kendalltau

    if len(x) < 2:
        return math.nan
    with warnings.catch_warnings():  # a constant input: scipy warns and gives nan, as wanted
        warnings.simplefilter("ignore")
        tau = float(kendalltau(x, y, variant="b").statistic)
    # a ratio of pair counts: rounded, so that a perfect order reads 1, not 1 - 2e-16
    return round(tau, 12) if math.isfinite(tau) else math.nan


#: up to this many systems the order's p-value counts every permutation; beyond, a seeded sample
EXACT_SYSTEMS = 8
PERMUTATIONS = 20_000


def order_p(people_acc: list[float], machine_acc: list[float], *, seed: int = SEED) -> float:
    """The permutation p-value of the systems' order: the share of the k! orders of the
    listener's accuracies whose tau-b with people's is at least the one observed (one-sided: a
    listener is asked to order systems as people do, not the reverse). Every order is counted
    up to ``EXACT_SYSTEMS`` systems; beyond, ``PERMUTATIONS`` drawn at random, (1 + hits) /
    (1 + draws).

    Args:
        people_acc: each system's accuracy by people.
        machine_acc: the same systems' accuracy by the listener.
        seed: the draws' seed, beyond ``EXACT_SYSTEMS`` systems.

    Returns:
        The p-value (nan for fewer than two systems or an undefined tau); at best 1 / k!.
    """
    k = len(people_acc)
    observed = kendall_tau_b(people_acc, machine_acc)
    if k < 2 or math.isnan(observed):
        return math.nan
    i, j = np.triu_indices(k, 1)
    x, y = np.asarray(people_acc, float), np.asarray(machine_acc, float)
    dx = np.sign(x[i] - x[j])
    if k <= EXACT_SYSTEMS:
        orders = np.array(list(itertools.permutations(range(k))))
    else:
        rng = np.random.default_rng(seed)
        orders = np.array([rng.permutation(k) for _ in range(PERMUTATIONS)])
    shuffled = y[orders]
    # a permutation moves the listener's values, not their ties: tau-b's denominator is fixed
    score = np.sign(shuffled[:, i] - shuffled[:, j]) @ dx
    pairs = len(dx)
    denom = math.sqrt((pairs - np.sum(dx == 0)) * (pairs - np.sum(np.sign(y[i] - y[j]) == 0)))
    hits = int(np.sum(score / denom >= observed - 1e-12))
    return hits / len(orders) if k <= EXACT_SYSTEMS else (1 + hits) / (1 + len(orders))


def _cells(people: dict[str, Answered], machine: dict[str, Answered], keys: list[str],
           who: dict[str, int], where: dict[str, int]) -> tuple[np.ndarray, ...]:
    """One system's right answers and responses by participant x sentence (people) and by
    sentence (the listener), for the bootstrap."""
    p_right = np.zeros((len(who), len(where)))
    p_total = np.zeros_like(p_right)
    m_right = np.zeros(len(where))
    m_total = np.zeros(len(where))
    for k in keys:
        s = where[people[k].sentence]
        for person, chosen in people[k].choices:
            p_total[who[person], s] += 1
            p_right[who[person], s] += chosen == people[k].correct_answer
        m_total[s] += 1
        m_right[s] += _machine_letter(machine[k]) == machine[k].correct_answer
    return p_right, p_total, m_right, m_total


def ranking(systems: list[tuple[str, dict, dict, list[str]]], *, replicates: int = REPLICATES,
            seed: int = SEED) -> dict:
    """Whether a listener orders the systems as people do.

    Args:
        systems: (system, people's questions, listener's questions, shared question ids) per
            system.
        replicates: bootstrap replicates.
        seed: the bootstrap's seed (reruns print the same figures).

    Returns:
        ``systems`` (name, people's and listener's accuracy), ``kendall_tau_b``, ``ci_low``,
        ``ci_high``, ``p_order`` (exact, one-sided), ``smallest_p`` (1 / k!),
        ``concordant``/``discordant``/``tied`` system pairs, ``undefined_replicates`` (a side
        constant in the resample), ``participants``, ``sentences``, ``replicates`` and the
        ``verdict`` in words.
    """
    names = [s[0] for s in systems]
    who = {p: i for i, p in enumerate(sorted({person for _, people, _, keys in systems
                                              for k in keys for person, _ in people[k].choices}))}
    where = {c: i for i, c in enumerate(sorted({people[k].sentence for _, people, _, keys
                                                 in systems for k in keys}))}
    cells = [_cells(people, machine, keys, who, where) for _, people, machine, keys in systems]
    acc_p = [float(c[0].sum() / c[1].sum()) for c in cells]
    acc_m = [float(c[2].sum() / c[3].sum()) for c in cells]
    tau = kendall_tau_b(acc_p, acc_m)
    low, high, undefined = _bootstrap_tau(cells, len(who), len(where), replicates, seed)
    k = len(systems)
    pairs = list(itertools.combinations(range(k), 2))
    signs = [np.sign(acc_p[i] - acc_p[j]) * np.sign(acc_m[i] - acc_m[j]) for i, j in pairs]
    out = {"systems": [{"system": n, "acc_people": a, "acc_machine": b}
                       for n, a, b in zip(names, acc_p, acc_m)],
           "kendall_tau_b": tau, "ci_low": low, "ci_high": high,
           "p_order": order_p(acc_p, acc_m),
           "smallest_p": 1 / math.factorial(k) if k >= 2 else math.nan,
           "concordant": int(sum(s > 0 for s in signs)),
           "discordant": int(sum(s < 0 for s in signs)),
           "tied": int(sum(s == 0 for s in signs)), "pairs": len(pairs),
           "undefined_replicates": undefined, "replicates": replicates,
           "participants": len(who), "sentences": len(where),
           "method": ("Kendall's tau-b of the systems' accuracies by people and by the listener; "
                      "95% percentile interval from a bootstrap resampling participants and "
                      "sentences together (one draw for every system); p: exact permutation "
                      "test of the order (one-sided)")}
    out["verdict"] = ranking_verdict(out)
    return out


def _bootstrap_tau(cells: list[tuple[np.ndarray, ...]], n_people: int, n_sentences: int,
                   replicates: int, seed: int) -> tuple[float, float, int]:
    """The percentile interval of tau-b over bootstrap resamples of participants and sentences,
    and how many resamples left it undefined (a side's accuracies all equal, or a system with no
    answers left in the resample)."""
    if len(cells) < 2 or n_sentences < 2:
        return math.nan, math.nan, 0
    rng = np.random.default_rng(seed)
    taus = []
    undefined = 0
    for _ in range(replicates):
        wp = np.bincount(rng.integers(0, n_people, n_people), minlength=n_people) \
            if n_people else np.zeros(0)
        ws = np.bincount(rng.integers(0, n_sentences, n_sentences), minlength=n_sentences)
        acc_p, acc_m = [], []
        for p_right, p_total, m_right, m_total in cells:
            dp, dm = wp @ p_total @ ws, m_total @ ws
            acc_p.append(wp @ p_right @ ws / dp if dp > 0 else math.nan)
            acc_m.append(m_right @ ws / dm if dm > 0 else math.nan)
        tau = math.nan if any(map(math.isnan, acc_p + acc_m)) else kendall_tau_b(acc_p, acc_m)
        if math.isnan(tau):
            undefined += 1
        else:
            taus.append(tau)
    if not taus:
        return math.nan, math.nan, undefined
    low, high = np.quantile(taus, [0.025, 0.975])
    return float(low), float(high), undefined


def ranking_verdict(r: dict) -> str:
    """The ranking's finding in plain words, honest about how few systems it rests on."""
    k = len(r["systems"])
    if k < 2:
        return ("One system: there is no ranking to compare; read the agreement per question "
                "above")
    if math.isnan(r["kendall_tau_b"]):
        few = (f"; with only {k} systems a rank correlation would say little anyway: trust "
               "the listener on these systems by its per-question agreement" if k <= 3 else "")
        return (f"{k} systems, but people's or the listener's accuracies are all equal: their "
                f"order cannot be compared{few}")
    same = (f"The listener orders {r['concordant']} of the {r['pairs']} pairs of systems as "
            "people do"
            + (f", {r['discordant']} the other way" if r["discordant"] else "")
            + (f", {r['tied']} tied on a side" if r["tied"] else ""))
    if k <= 3:
        return (f"{same}; with only {k} systems a rank correlation says little: even the same "
                f"order would arise by chance with probability {r['smallest_p']:.2g} (1/{k}!), "
                "so trust the listener on these systems by its per-question agreement, and "
                "test more systems to judge its ranking")
    p = r["p_order"]
    if not math.isnan(p) and p < LEVEL and r["ci_low"] > 0:
        return (f"{same}: it ranks these {k} systems as people do more closely than chance"
                f" (tau-b {r['kendall_tau_b']:.2f}, p = {p:.2g})")
    return (f"{same}: not shown to rank these {k} systems as people do (tau-b "
            f"{r['kendall_tau_b']:.2f}, 95% interval {r['ci_low']:.2f} to {r['ci_high']:.2f}"
            + (f", p = {p:.2g}" if not math.isnan(p) else "") + ")")


def agreement_verdict(c: dict) -> str:
    """Whether a listener's per-person agreement is above chance, in words with its n."""
    a = c["per_participant"]
    if math.isnan(a["p_chance"]):
        return "too few participants or sentences to test"
    if a["p_chance"] < LEVEL:
        return "above chance" if a["agreement"] > a["chance"] else "below chance"
    return "not shown above chance"


# ----------------------------------------------------------------------------- the runs
def _one_each(sources: list[Source]) -> tuple[list[Source], list[str]]:
    """One run per (people or listener, system): the newest of several, each older one named.

    Returns:
        The runs kept, and a note per run left out.
    """
    groups: dict[tuple[str, str], list[Source]] = defaultdict(list)
    for s in sources:
        groups[(s.key, s.system)].append(s)
    kept, notes = [], []
    for group in groups.values():
        group.sort(key=lambda s: s.when)
        kept.append(group[-1])
        notes += [f"{old.path}: an older run of {old.system} by {old.listener} than "
                  f"{group[-1].path}; the newest is used (name a results file to use "
                  "another)" for old in group[:-1]]
    return kept, notes


def _check_corpus(sources: list[Source]) -> None:
    """Refuse runs made on different corpora (their questions are not the same ones)."""
    first = sources[0]
    sha = first.corpus_sha256
    for s in sources[1:]:
        other = s.corpus_sha256
        if other != sha:
            raise AgreementError(f"{s.path}: made on another corpus than "
                                 f"{first.path} (sha256 {other} vs {sha}); answers "
                                 "to different corpora cannot be set side by side")


def _people_for(machine: Source, people: dict[str, Source]) -> Source:
    """The people's run of a listener's run's system.

    Raises:
        AgreementError: people did not hear that system, or heard none of its tasks.
    """
    mine = people.get(machine.system)
    if mine is None:
        raise AgreementError(
            f"{machine.path}: a run of {machine.system!r}, but no people's answers to "
            f"{machine.system!r} are given (people's answers to: {', '.join(sorted(people))}); "
            "the listener's answers can only be set against people's answers to the same "
            "system's samples")
    if not set(mine.tasks) & set(machine.tasks):
        raise AgreementError(
            f"{machine.path}: none of its tasks ({', '.join(machine.tasks)}) is among the "
            f"people's in {mine.path} ({', '.join(mine.tasks)})")
    return mine


def _files(responses: dict[str, str], runs: list[Source], corpus) -> list[Source]:
    """The people's answers read from responses files, one per system.

    Raises:
        AgreementError: a system also has a people's run among the runs (which one to use
            would be a guess).
    """
    if not responses:
        return []
    heard = {s.system: s for s in runs if s.people}
    for system, path in responses.items():
        if system in heard:
            raise AgreementError(f"{path}: people's answers for {system!r}, which the people's "
                                 f"run {heard[system].path} has too; give one of the two")
    if corpus is None:
        from adept_eval.corpora.corpus import load_corpus

        corpus = load_corpus()
    return [responses_source(system, path, corpus) for system, path in responses.items()]


def agreement(paths: list[str], *, responses: dict[str, str] | None = None, corpus=None,
              replicates: int = REPLICATES, seed: int = SEED) -> dict:
    """Every automatic listener's answers set against people's, per system and task, and its
    ranking of the systems against theirs.

    Args:
        paths: lm-eval results files or folders (searched for every run): the people's runs
            (the ``human`` listener) and the automatic listeners' runs, each with
            ``--log_samples``.
        responses: system -> a listening test's responses file of that system, people's
            answers read directly (``responses_source``) instead of from a run.
        corpus: the corpus those files answer (``Corpus``; default: ``load_corpus()``), only
            read with ``responses``.
        replicates: bootstrap replicates of the ranking's interval.
        seed: the bootstrap's seed.

    Returns:
        ``runs`` (each taken run: system, who answered, results file), ``notes`` (older runs
        left out, questions in one run only), ``level`` and ``listeners``: per listener its
        ``systems`` (system -> ``people``/``machine`` results files, ``pooled``, ``tasks``,
        ``verdict``) and ``ranking``.

    Raises:
        AgreementError: no people's run or no listener's run, runs of different corpora, a
            listener's run of a system or tasks people did not answer, no question answered on
            both sides, or samples not logged; each names the file.
        ResponsesError: a responses file cannot be read or has unusable rows.
        PublishError: a path holds no run or a damaged one.
    """
    sources, notes = _one_each([_source(r) for r in find_runs(paths)])
    sources += _files(responses or {}, sources, corpus)
    people = {s.system: s for s in sources if s.people}
    machines = [s for s in sources if not s.people]
    if not people:
        raise AgreementError(f"{', '.join(map(str, paths))}: no people's run among them (an "
                             "lm_eval run with --metadata listener=human responses=FILE, made "
                             "with --log_samples), and no --responses SYSTEM=FILE")
    if not machines:
        raise AgreementError(f"{', '.join(map(str, paths))}: no automatic listener's run among "
                             "them, only people's; add the runs of the same systems scored by "
                             "a listener")
    _check_corpus(sources)
    read: dict[str, dict[str, Answered]] = {}

    def questions(s: Source, tasks: list[str]) -> dict[str, Answered]:
        key = str(s.path)
        if key not in read:
            read[key] = answered(s, tasks)
        return read[key]

    by_listener: dict[str, list[Source]] = defaultdict(list)
    for m in machines:
        by_listener[m.key].append(m)
    listeners = []
    for group in by_listener.values():
        entry = _listener_entry(group, people, questions, notes, replicates, seed)
        listeners.append(entry)
    return {"runs": [{"system": s.system, "answered_by": s.listener,
                      "results": str(s.path)} for s in sources],
            "notes": notes, "level": 1 - LEVEL, "listeners": listeners}


def _listener_entry(group: list[Source], people: dict[str, Source], questions, notes: list[str],
                    replicates: int, seed: int) -> dict:
    """One listener's agreement on each of its systems, and its ranking of them."""
    systems, ranked = {}, []
    for m in sorted(group, key=lambda s: s.system):
        mine = _people_for(m, people)
        tasks = [t for t in mine.tasks if t in set(m.tasks)]
        p, q = questions(mine, tasks), questions(m, tasks)
        result = system_agreement(p, q)
        if not result["keys"]:
            raise AgreementError(f"{m.path}: no question both answered by its "
                                 f"listener and by people in {mine.path}")
        left = sorted(set(mine.tasks) ^ set(m.tasks))
        if left:
            notes.append(f"{m.system}, {m.listener}: tasks in only one of the two runs left out: "
                         + ", ".join(left))
        if result["only_people"] or result["only_machine"]:
            notes.append(f"{m.system}, {m.listener}: {result['only_people']} questions only in "
                         f"the people's run and {result['only_machine']} only in the listener's "
                         "left out")
        ranked.append((m.system, p, q, result.pop("keys")))
        result.pop("only_people")
        result.pop("only_machine")
        systems[m.system] = {"people": str(mine.path),
                             "machine": str(m.path), **result,
                             "verdict": agreement_verdict(result["pooled"])}
    unheard = sorted(set(people) - set(systems))
    if unheard:
        notes.append(f"{group[0].listener}: no run of {', '.join(unheard)} (people's only)")
    return {"listener": group[0].listener, "systems": systems,
            "ranking": ranking(ranked, replicates=replicates, seed=seed)}


def to_json(result: dict) -> dict:
    """The ``--json`` document: nan written as null."""
    from adept_eval.results.formatting import nan_as_null

    return nan_as_null(result)


__all__ = ["Answered", "agreement", "answered", "cell", "kendall_tau_b", "majority_credit",
           "order_p", "ranking", "system_agreement", "to_json"]
