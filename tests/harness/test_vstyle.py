"""VStyle tasks in lm-eval, judged by speech_judge: the end-to-end replay of the published
examples reproduces every system's recorded scores; the category interval
(``score_ci_low``/``score_ci_high``) over a handful of judged answers per subcategory rests each
subcategory's variance on its own degrees of freedom and stays on the judge's scale."""

import hashlib
import math
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from adept_eval.harness import vstyle as vh
from adept_eval.judge import JudgeConfig
from adept_eval.judge.runner import prepare_audio
from testing.judge_server import JudgeServer
from adept_eval.corpora.vstyle import (
    CATEGORIES,
    load_records,
    normalise_ability,
    subcategory_weights,
)
from conftest import run_lm_eval, shared_or_skip


@pytest.fixture(scope="module")
def examples():
    folder = shared_or_skip("data", "vstyle_examples", "en")
    return folder, load_records(folder)


@pytest.fixture(scope="module")
def replay(examples):
    cfg = JudgeConfig()
    return {hashlib.sha256(prepare_audio(r.audio_path, cfg, "r")).hexdigest(): r.judge_raw
            for rec in examples[1] for r in rec.responses}


def test_normalised_categories_cover_the_examples(examples):
    seen = {normalise_ability(rec.ability) for rec in examples[1]}
    for cat, sub in seen:
        assert cat in CATEGORIES and sub in CATEGORIES[cat], (cat, sub)
    w = subcategory_weights()
    assert sum(w.values()) == pytest.approx(1.0)
    assert w[("acoustic_attributes", "composite_properties")] == pytest.approx(0.125)
    assert w[("acoustic_attributes", "age")] == pytest.approx(0.125 / 6)
    assert w[("role_play", "scenario")] == pytest.approx(0.125)


def _published_weight(category: str, sub: str) -> float:
    """VStyle's published weighting, written here from its description (../shared/README.md),
    not taken from the code under test: each category 0.25; inside acoustic attributes,
    composite_properties half of it and the six other subcategories share the other half;
    elsewhere the subcategories share their category equally."""
    if category == "acoustic_attributes":
        return 0.25 / 2 if sub == "composite_properties" else 0.25 / 2 / 6
    return 0.25 / len(CATEGORIES[category])


def _vstyle_weighted(scores_by_ability: dict) -> float:
    """VStyle's overall: weighted sum of subcategory means over the subcategories present."""
    num = den = 0.0
    for (category, sub), scores in scores_by_ability.items():
        num += _published_weight(category, sub) * statistics.mean(scores)
        den += _published_weight(category, sub)
    return num / den


def test_replayed_examples_reproduce_each_systems_recorded_mean(examples, replay, tmp_path):
    folder, records = examples
    systems = defaultdict(list)
    for rec in records:
        for r in rec.responses:
            suffix = Path(r.audio_path).stem[len(rec.record_id):]
            systems[(r.model_name, suffix)].append((rec, r))
    assert len(systems) == 7
    from adept_eval.results.runs import Run
    from adept_eval.results.leaderboard import build

    runs = []
    with JudgeServer() as server:
        server.replay = dict(replay)
        for (system, suffix), pairs in sorted(systems.items()):
            res = run_lm_eval(
                "audio-dir", ["vstyle_en"],
                model_args={"path": str(folder / "wav"), "pattern": "{id}" + suffix,
                            "name": system},
                metadata={"vstyle_dir": str(folder), "judge_base_url": server.url,
                          "judge_model": "replay-judge", "judge_cache": ""})
            recorded = [r.judge_score for _, r in pairs]
            group = res["results"]["vstyle_en"]
            assert group["score_mean,speech_judge"] == pytest.approx(statistics.mean(recorded),
                                                                       rel=1e-12), system
            by_ability = defaultdict(list)
            for rec, r in pairs:
                by_ability[normalise_ability(rec.ability)].append(r.judge_score)
            # the overall: each category 0.25 of the weight
            cats = defaultdict(dict)
            for key, scores in by_ability.items():
                cats[key[0]][key] = scores
            overall = statistics.mean(_vstyle_weighted(v) for v in cats.values())
            assert group["score,speech_judge"] == pytest.approx(overall, rel=1e-12), system
            for cat in CATEGORIES:
                r = res["results"][f"vstyle_en_{cat}"]
                assert r["n_failed,speech_judge"] == 0
                assert r["score,speech_judge"] == pytest.approx(_vstyle_weighted(cats[cat]))
            runs.append(Run(Path(f"results_{len(runs)}.json"), res))
            sample = res["samples"]["vstyle_en_instruction"][0]
            rec = sample["score"]
            rec = rec[0] if isinstance(rec, list) else rec
            assert rec["prompt"] == "builtin:vstyle-instruction" and rec["system"] == system
            assert "Final score" in sample["filtered_resps"][0]
    # the leaderboard ranks the seven systems by VStyle's overall score, one judge identity
    rows = build(runs)
    figure = lambda r, name: r.figure("vstyle", name)  # noqa: E731
    assert len({r.scorers["vstyle"] for r in rows}) == 1
    assert sorted(figure(r, "rank") for r in rows) == list(range(1, 8))
    ranked = sorted(rows, key=lambda r: figure(r, "rank"))
    assert [figure(r, "score") for r in ranked] == sorted((figure(r, "score") for r in rows),
                                                          reverse=True)
    assert all(figure(r, "n") == 33 and figure(r, "failure_rate") == 0 for r in rows)


def test_missing_responses_are_failures(examples, replay, tmp_path):
    import shutil

    folder, records = examples
    wav = tmp_path / "wav"
    wav.mkdir()
    kept = 0
    for rec in records:
        for r in rec.responses:
            if r.model_name == "Kimi" and rec.category == "empathy" and kept < 2:
                shutil.copy(r.audio_path, wav / f"{rec.record_id}.mp3")
                kept += 1
    n_empathy = sum(rec.category == "empathy" for rec in records)
    with JudgeServer() as server:
        server.replay = dict(replay)
        res = run_lm_eval("audio-dir", ["vstyle_en_empathy"],
                          model_args={"path": str(wav), "name": "partial", "on_missing": "wrong"},
                          metadata={"vstyle_dir": str(folder), "judge_base_url": server.url,
                                    "judge_model": "m", "judge_cache": ""})
    r = res["results"]["vstyle_en_empathy"]
    assert r["n,speech_judge"] == 2 and r["n_failed,speech_judge"] == n_empathy - 2
    assert r["failure_rate,speech_judge"] == pytest.approx((n_empathy - 2) / n_empathy)


def test_judge_settings_from_metadata(tmp_path):
    from adept_eval.harness import settings
    from adept_eval.errors import PromptError
    from adept_eval.harness.vstyle import judge_config

    # settings is the one place an unknown judge setting is refused (before judge_config)
    with pytest.raises(settings.SettingsError, match="unknown judge setting 'judge_colour'"):
        settings.split({"judge_colour": "x"}, suite="vstyle")
    for cat in ("role_play", "empathy"):
        (tmp_path / f"{cat}.txt").write_text(f"{cat}: {{instruction_type}} {{input_instruction}}")
    cfg = judge_config({"judge_prompts": str(tmp_path), "judge_model": "m", "judge_cache": ""})
    assert [k for k, _ in cfg["prompts"]] == ["empathy", "role_play"]
    assert cfg["model"] == "m" and cfg["cache_path"] == ""
    (tmp_path / "instruction.txt").write_text("no placeholders here")
    with pytest.raises(PromptError, match="placeholder"):
        judge_config({"judge_prompts": str(tmp_path)})


def test_prompts_named_as_vstyle_names_its_categories_judge_them(examples, tmp_path):
    """A ``judge_prompts`` folder in VStyle's own spellings (``role_playing.txt``,
    ``acoustic_properties.txt``) judges those categories with its prompts, and a category it has
    no prompt for with the built-in one; each logged sample names its prompt. Before, the two
    files matched no category and were ignored: every answer got the built-in prompt."""
    folder, _ = examples
    prompts = tmp_path / "eval_prompts"
    prompts.mkdir()
    for stem, label in (("role_playing", "ROLE-PLAY JUDGE"), ("acoustic_properties", "ACOUSTIC")):
        (prompts / f"{stem}.txt").write_text(f"{label}: {{instruction_type}} "
                                             "{input_instruction}", encoding="utf-8")
    verdicts = {"ROLE-PLAY JUDGE": 5, "ACOUSTIC": 4}

    def verdict(body, audios, texts):
        score = next((v for k, v in verdicts.items() if any(t.startswith(k) for t in texts)), 1)
        return f"Judged.\n\nFinal score: [[{score}]]"

    tasks = ["vstyle_en_role_play", "vstyle_en_acoustic_attributes", "vstyle_en_empathy"]
    with JudgeServer() as server:
        server.responder = verdict
        res = run_lm_eval("audio-dir", tasks,
                          model_args={"path": str(folder / "wav"), "pattern": "{id}-Kimi"},
                          metadata={"vstyle_dir": str(folder), "judge_base_url": server.url,
                                    "judge_model": "m", "judge_cache": "",
                                    "judge_prompts": str(prompts)})
    expected = {"vstyle_en_role_play": (5.0, "role_playing.txt"),
                "vstyle_en_acoustic_attributes": (4.0, "acoustic_properties.txt"),
                "vstyle_en_empathy": (1.0, "builtin:vstyle-instruction")}
    for task, (score, prompt) in expected.items():
        assert res["results"][task]["score_mean,speech_judge"] == score, task
        logged = [s["score"][0] if isinstance(s["score"], list) else s["score"]
                  for s in res["samples"][task]]
        assert logged and {r["prompt"] for r in logged} == {prompt}, task


def test_judge_identity_names_the_host_either_way(monkeypatch):
    """The scorer identity names the judge's host, whether or not the runner can be built: one
    rule (``server_name``), so a run is not told apart from another by how it was identified."""
    from adept_eval.judge import runner
    from adept_eval.harness.vstyle import judge_config, judge_identity

    cfg = judge_config({"judge_base_url": "http://127.0.0.1:8123/v1", "judge_model": "m",
                        "judge_cache": ""})
    assert judge_identity(cfg)["server"] == "127.0.0.1"

    def cannot_build(self, config):
        raise RuntimeError("no runner here")

    monkeypatch.setattr(runner.JudgeRunner, "__init__", cannot_build)
    assert judge_identity(cfg)["server"] == "127.0.0.1"


def test_group_score_mean_weighs_only_judged_answers(examples, replay, tmp_path):
    """Answers the judge could not score are counted failures: the group's score_mean is the
    mean of the scores actually recorded, not a document-weighted mean of category means."""
    folder, records = examples
    system = sorted({r.model_name for rec in records for r in rec.responses})[0]
    pairs = [(rec, r) for rec in records for r in rec.responses if r.model_name == system]
    suffix = Path(pairs[0][1].audio_path).stem[len(pairs[0][0].record_id):]
    broken = dict(replay)
    # unparseable verdicts in uneven numbers per category: 3 / 2 / 1 / 0
    quota = {"acoustic_attributes": 3, "instruction": 2, "role_play": 1, "empathy": 0}
    cfg = JudgeConfig()
    failed = set()
    for rec, r in pairs:
        cat = normalise_ability(rec.ability)[0]
        if quota.get(cat, 0) > 0:
            quota[cat] -= 1
            broken[hashlib.sha256(prepare_audio(r.audio_path, cfg, "r")).hexdigest()] = \
                "I cannot rate this one."
            failed.add(rec.record_id)
    assert len(failed) == 6
    with JudgeServer() as server:
        server.replay = broken
        res = run_lm_eval("audio-dir", ["vstyle_en"],
                          model_args={"path": str(folder / "wav"), "pattern": "{id}" + suffix,
                                      "name": system},
                          metadata={"vstyle_dir": str(folder), "judge_base_url": server.url,
                                    "judge_model": "replay-judge", "judge_cache": "",
                                    "judge_max_reasks": 0})
    scored = [r.judge_score for rec, r in pairs if rec.record_id not in failed]
    group = res["results"]["vstyle_en"]
    assert group["score_mean,speech_judge"] == pytest.approx(statistics.mean(scored), rel=1e-12)
    assert group["n,speech_judge"] == len(scored) and group["n_failed,speech_judge"] == 6
    per_cat = [res["results"][f"vstyle_en_{c}"]["n_failed,speech_judge"] for c in CATEGORIES]
    assert sorted(per_cat) == [0, 1, 2, 3]
    # one copy of the per-instruction record per logged sample
    sample = res["samples"]["vstyle_en_instruction"][0]
    assert isinstance(sample["score"], dict) and sample["score"]["record_id"]
    assert str(sample["n"]) == "(see score)"
    # the run carries its identity: judge (with its server), corpus, complete task set
    ident = res["adept_eval"]["suites"]["vstyle"]
    assert ident["complete"] and ident["scorer"]["model"] == "replay-judge"
    assert ident["scorer"]["server"] == "127.0.0.1"  # the host: a restart on another port is the same judge
    assert len(ident["corpus"]["sha256"]) == 64 and ident["corpus"]["synthetic"] is False
    assert res["adept_eval"]["system"] == system


# ----------------------------------------------------------------------------- category interval
@pytest.mark.parametrize("sizes,weights", [
    ([3, 3, 3, 3], [1, 1, 1, 1]),   # 4 subcategories x 3 judged answers
    ([1, 3, 3, 3], [1, 1, 1, 1]),   # one subcategory with a single judged answer
    ([3, 3, 3, 3], [3, 1, 1, 1]),   # composite_properties-like weighting
])
def test_category_interval_covers_the_true_score(sizes, weights):
    runs = 2000
    se = math.sqrt(0.05 * 0.95 / runs)
    rng = np.random.default_rng(11)
    means, sds = np.linspace(2, 4, len(sizes)), np.linspace(0.6, 1.4, len(sizes))
    true = float(np.dot(weights, means) / sum(weights))
    covered = 0
    for _ in range(runs):
        items = [{"sub": f"s{g}", "weight": weights[g], "score": float(x), "failed": 0}
                 for g, n in enumerate(sizes) for x in rng.normal(means[g], sds[g], n)]
        covered += vh.ci_low(items) <= true <= vh.ci_high(items)
    assert covered / runs >= 0.95 - 2 * se, covered / runs
    assert covered / runs <= 0.99, covered / runs  # not bought by an interval of everything


def test_one_judged_answer_per_subcategory_everywhere_has_no_interval():
    items = [{"sub": f"s{g}", "weight": 1, "score": 3.0 + g, "failed": 0} for g in range(4)]
    assert vh.category_score(items) == pytest.approx(4.5)
    assert math.isnan(vh.ci_low(items)) and math.isnan(vh.ci_high(items))


def test_the_interval_stays_on_the_judges_scale():
    """Two subcategories of two widely split answers: the t interval on ~2 degrees of freedom
    reached [-1.4, 8.8] for a mean of 1-5 scores; it is cut to [1, 5] (the part outside holds no
    possible value), and an interval inside the scale is left as it is."""
    from adept_eval.scoring import stats
    from adept_eval.judge.runner import mean_interval

    items = [{"sub": f"s{g}", "weight": 1, "score": x, "failed": 0}
             for g in range(2) for x in (1.0, 5.0)]
    raw = stats.stratified_mean_interval(vh._by_sub(items), {"s0": 1, "s1": 1})
    assert raw[1] < 1 and raw[2] > 5  # what the scale cuts
    assert (vh.ci_low(items), vh.ci_high(items)) == (1.0, 5.0)
    assert mean_interval([1.0, 5.0]) == (1.0, 5.0)
    inside = mean_interval([3.0, 3.5, 4.0, 3.5])
    assert inside == stats.t_interval([3.0, 3.5, 4.0, 3.5]) and 1 < inside[0] < inside[1] < 5
    assert all(math.isnan(v) for v in stats.within(math.nan, math.nan, (1, 5)))
