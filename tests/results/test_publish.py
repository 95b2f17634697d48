"""Results to a loopback Hugging Face Hub through the real huggingface_hub client: lm-eval's own
push, `adept-eval publish`, eval results on a model repo, the leaderboard, the metric Space."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from testing.hub_server import HubServer

ROOT = Path(__file__).resolve().parents[2]
OPENAI_SECRET = "sk-" + "loopbacksecret" * 3
TASKS = "adept_emotion_female,adept_syntactic_phrasing_male"


@pytest.fixture(scope="module")
def hub():
    """The loopback Hub of this module. When the module is done with it - after every test that
    pushed, whatever order they ran in - every file any of them uploaded is scanned for the Hub
    token and the OpenAI key that every pushing process had in its environment."""
    with HubServer() as server:
        yield server
        assert_nothing_secret(server)


def assert_nothing_secret(server) -> None:
    assert server.uploaded, "no test pushed anything: the scan would prove nothing"
    for repo, path, content in server.uploaded:
        assert server.token.encode() not in content, (repo, path)
        assert OPENAI_SECRET.encode() not in content, (repo, path)


def _env(hub, tmp, **extra):
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1",
           "HF_TOKEN": hub.token, "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HOME": str(tmp / "hf"),
           "OPENAI_API_KEY": OPENAI_SECRET, "ADEPT_EVAL_HOME": str(tmp / "home"),
           "TQDM_DISABLE": "1"}
    env.update(extra)
    return env


def _run(args, env, cwd, check=True):
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=900)
    if check and done.returncode != 0:
        raise AssertionError(f"{args[:3]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done


def _lm_eval(*args):
    exe = shutil.which("lm_eval")
    if exe is None:
        pytest.skip("lm_eval console script not on PATH")
    return [exe, *args]


def _adept_eval(*args):
    return [sys.executable, "-m", "adept_eval.cli", *args]


@pytest.fixture(scope="module")
def runs(hub, corpus, systems, tmp_path_factory):
    """Three lm-eval runs, as a user makes them: two systems scored by the acoustic listener,
    one by human listeners (another scorer: it must never be ranked with the others)."""
    tmp = tmp_path_factory.mktemp("runs")
    env = _env(hub, tmp, ADEPT_EVAL_CORPUS=str(corpus.root))
    out = tmp / "out"
    _run(_lm_eval("--model", "adept-natural", "--tasks", TASKS, "--output_path", str(out),
                  "--log_samples"), env, tmp)
    _run(_lm_eval("--model", "audio-dir", "--model_args", f"path={systems['flat']},name=flat-tts",
                  "--tasks", TASKS, "--output_path", str(out), "--log_samples"), env, tmp)
    from adept_eval.corpora.questions import build_questions

    rows = ["participant,question_id,answer"]
    for q in build_questions(corpus, "adept_emotion_female"):
        wrong = "ABCDE"[(q.answer + 1) % q.n_choices]
        rows += [f"p1,{q.question_id},{q.answer_letter}", f"p2,{q.question_id},{wrong}"]
    (tmp / "answers.csv").write_text("\n".join(rows))
    _run(_lm_eval("--model", "audio-dir", "--model_args", f"path={systems['copy']},name=copy-tts",
                  "--tasks", "adept_emotion_female", "--output_path", str(tmp / "human"),
                  "--metadata", "listener=human", f"responses={tmp / 'answers.csv'}"), env, tmp)
    return tmp, env


def test_lm_eval_hub_push_with_and_without_samples(hub, corpus, tmp_path):
    env = _env(hub, tmp_path, ADEPT_EVAL_CORPUS=str(corpus.root))
    base = ("--model", "adept-natural", "--tasks", "adept_marked_tonicity_female",
            "--output_path", str(tmp_path / "out"))
    # results only: lm-eval 0.4.13 would crash building its card; adept-eval skips the card
    done = _run(_lm_eval(*base, "--hf_hub_log_args",
                         "hub_results_org=adept-lab,details_repo_name=lm-eval-results,"
                         "push_results_to_hub=True,public_repo=True"), env, tmp_path)
    assert "card was skipped" in done.stderr + done.stdout
    repo = hub.repo("adept-lab/lm-eval-results")
    assert any(p.startswith("adept-natural/results_") for p in repo.files)
    # with samples: lm-eval pushes them and writes its card
    _run(_lm_eval(*base, "--log_samples", "--hf_hub_log_args",
                  "hub_results_org=adept-lab,details_repo_name=lm-eval-details,"
                  "push_results_to_hub=True,push_samples_to_hub=True,public_repo=True"), env, tmp_path)
    repo = hub.repo("adept-lab/lm-eval-details")
    assert any("samples_adept_marked_tonicity_female" in p for p in repo.files)
    assert "README.md" in repo.files


def test_publish_run_details_audio_and_model_card(hub, runs):
    tmp, env = runs
    _run([sys.executable, "-c", "from huggingface_hub import HfApi; HfApi().create_repo('alice/flat-tts')"],
         env, tmp)
    args = ("--repo", "adept-lab/adept-results", "--audio", "--model-repo", "alice/flat-tts",
            "--benchmark-dataset", "adept-lab/ADEPT")
    out = _run(_adept_eval("publish", str(tmp / "out" / "flat-tts"), *args), env, tmp).stdout
    # the synthetic stand-in's scores never reach a model card as ADEPT results
    assert "pushed" in out and "synthetic stand-in" in out and "wrote" not in out
    assert hub.repo("alice/flat-tts", "model").files.get("README.md") is None or \
        b"model-index" not in hub.repo("alice/flat-tts", "model").files["README.md"]
    # the same run as if made on the real corpus (the card plumbing is what is tested here)
    import json

    real = tmp / "real"
    shutil.copytree(tmp / "out" / "flat-tts", real)
    results = next(real.glob("results_*.json"))
    data = json.loads(results.read_text())
    data["adept_eval"]["suites"]["adept"]["corpus"]["synthetic"] = False
    results.write_text(json.dumps(data))
    out = _run(_adept_eval("publish", str(real), *args), env, tmp).stdout
    assert "pushed" in out and "wrote 2 scores to alice/flat-tts" in out
    repo = hub.repo("adept-lab/adept-results")
    files = sorted(repo.files)
    run_dir = next(p for p in files if p.startswith("runs/flat-tts/")).split("/")[2]
    prefix = f"runs/flat-tts/{run_dir}/"
    assert prefix + "results.json" in files
    assert prefix + "details/adept_emotion_female.parquet" in files
    assert any(p.startswith(prefix + "audio/emotion/") for p in files)
    details = tmp / "d.parquet"
    details.write_bytes(repo.files[prefix + "details/adept_emotion_female.parquet"])
    table = pq.read_table(details).to_pylist()
    assert len(table) == 20 and {"question_id", "correct_answer", "answer", "listener"} <= set(table[0])
    model = hub.repo("alice/flat-tts", "model")
    card = model.files["README.md"].decode()
    assert "model-index" in card and "adept_emotion_female" in card
    evals = [p for p in model.files if p.startswith(".eval_results/")]
    assert evals and b"adept-lab/ADEPT" in model.files[evals[0]]
    # read back as anyone reads the card: each task's score is an entry of its own (its dataset
    # config is the task, as in the Hub copy of ADEPT), not one entry holding every score under
    # the first task's name; the .eval_results entries say the same
    index, entries = _read_back_eval_results(env, tmp, "alice/flat-tts", evals[0])
    assert len(index) == 2 and {r["config"] for r in index} == set(TASKS.split(",")), index
    assert all(r["task"] == r["config"] and r["dataset"] == "adept-lab/ADEPT" for r in index)
    assert {r["task"]: r["value"] for r in index} == {e["task"]: e["value"] for e in entries}
    results = json.loads(next(real.glob("results_*.json")).read_text())["results"]
    assert {r["task"]: r["value"] for r in index} == {
        t: round(results[t]["acc,none"], 4) for t in TASKS.split(",")}
    # a repo the user does not own is left alone
    out = _run(_adept_eval("publish", str(tmp / "out" / "adept-natural"), "--repo",
                           "adept-lab/adept-results", "--model-repo", "bob/someone-elses"),
               env, tmp).stdout
    assert "left alone" in out and hub.repo("bob/someone-elses", "model") is None


def _read_back_eval_results(env, cwd, model_repo: str, eval_file: str):
    """A model repo's scores as huggingface_hub reads them from the Hub: the card's model-index
    (``ModelCard.load``: one item per metric, with its entry's task and dataset) and an
    ``.eval_results`` file (``parse_eval_result_entries``)."""
    code = (
        "import json, sys, yaml; from huggingface_hub import ModelCard, hf_hub_download, "
        "parse_eval_result_entries; repo, name = sys.argv[1:]; "
        "card = ModelCard.load(repo); "
        "index = [{'task': r.task_name, 'dataset': r.dataset_type, 'config': r.dataset_config, "
        "'value': r.metric_value, 'metric': r.metric_type, 'name': r.metric_name, "
        "'source': r.source_name, 'url': r.source_url} for r in card.data.eval_results]; "
        "raw = yaml.safe_load(open(hf_hub_download(repo, name)).read()); "
        "entries = [{'task': e.task_id, 'dataset': e.dataset_id, 'value': e.value} "
        "for e in parse_eval_result_entries(raw)]; "
        "print(json.dumps([index, entries]))")
    done = _run([sys.executable, "-c", code, model_repo, eval_file], env, cwd)
    return json.loads(done.stdout)


def _as_real_run(source: Path, dest: Path, *, stamp: str | None = None, date: float | None = None,
                 scores: dict | None = None, cut_short: str | None = None) -> Path:
    """A copy of a run folder as if made on the real corpus (the synthetic stand-in's scores
    never reach a card): its files renamed to another timestamp, its date, scores and a task
    it ran with lm-eval's --limit (``n-samples``) changed - a newer run, or the same one fixed."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("hub_upload"))
    results = next(dest.glob("results_*.json"))
    old = results.name[len("results_"):-len(".json")]
    data = json.loads(results.read_text())
    data["adept_eval"]["suites"]["adept"]["corpus"]["synthetic"] = False
    for task, value in (scores or {}).items():
        data["results"][task]["acc,none"] = value
    if date is not None:
        data["date"] = date
    if cut_short:
        data["n-samples"][cut_short]["effective"] = 3
    results.write_text(json.dumps(data))
    if stamp:
        for path in list(dest.glob(f"*_{old}.json*")):
            path.rename(path.with_name(path.name.replace(old, stamp)))
    return dest


def test_republishing_replaces_the_scores_adept_eval_wrote_and_keeps_the_others(hub, runs):
    """Publishing a model's scores again - a partial run redone in full, a newer run of the same
    tasks, the same run twice - replaces the model-index entries adept-eval wrote for those
    tasks and metrics. huggingface_hub's merge replaced an entry only when everything but its
    value was equal, source (the run's folder) and metric name (partial or not) included, so
    each re-publish added a second, contradictory score per task beside the first. Entries
    adept-eval did not write stay as they were (one of the same dataset, config and metric
    among them), and so do its own scores of tasks the new run did not have."""
    tmp, env = runs
    model = "alice/republished-tts"
    code = textwrap.dedent("""
        import sys
        from huggingface_hub import EvalResult, HfApi, ModelCardData, metadata_update
        repo = sys.argv[1]
        HfApi().create_repo(repo)
        ADEPT = dict(dataset_type="adept-lab/ADEPT", dataset_name="ADEPT")
        before = [
            EvalResult(task_type="automatic-speech-recognition", dataset_type="other/asr",
                       dataset_name="asr", metric_type="wer", metric_value=0.123,
                       source_name="another-tool", source_url="https://example.org/wer"),
            EvalResult(task_type="audio-classification", **ADEPT,
                       dataset_config="adept_emotion_female", metric_type="accuracy",
                       metric_value=0.777, source_name="another-tool",
                       source_url="https://example.org/emotion"),
            EvalResult(task_type="text-to-speech", **ADEPT,
                       dataset_config="adept_marked_tonicity_female",
                       task_name="adept_marked_tonicity_female", metric_type="accuracy",
                       metric_value=0.5, source_name="adept-eval",
                       source_url="https://example.org/an-earlier-run")]
        card = ModelCardData(model_name="republished-tts", eval_results=before).to_dict()
        metadata_update(repo, {"model-index": card["model-index"]})
    """)
    _run([sys.executable, "-c", code, model], env, tmp)
    kept = sorted([("adept_emotion_female", "accuracy", 0.777, "another-tool"),
                   ("adept_marked_tonicity_female", "accuracy", 0.5, "adept-eval"),
                   (None, "wer", 0.123, "another-tool")], key=repr)
    first = _as_real_run(tmp / "out" / "flat-tts", tmp / "republish" / "first",
                         cut_short="adept_emotion_female")
    second = _as_real_run(tmp / "out" / "flat-tts", tmp / "republish" / "second",
                          stamp="2099-01-01T00-00-00.000000", date=4070908800.0,
                          scores={"adept_emotion_female": 0.55,
                                  "adept_syntactic_phrasing_male": 0.25})
    args = ("--repo", "adept-lab/republished-results", "--model-repo", model,
            "--benchmark-dataset", "adept-lab/ADEPT")
    done = _run(_adept_eval("publish", str(first), *args, "--allow-partial"), env, tmp)
    assert "wrote 2 scores" in done.stdout and "1 of them labelled partial" in done.stdout, \
        done.stdout
    evals = [p for p in hub.repo(model, "model").files if p.startswith(".eval_results/")]
    index, _ = _read_back_eval_results(env, tmp, model, evals[0])
    assert len(index) == 5, index
    for _ in range(2):  # the newer run, then the same run again
        done = _run(_adept_eval("publish", str(second), *args), env, tmp)
        assert "wrote 2 scores" in done.stdout and "partial" not in done.stdout, done.stdout
        index, entries = _read_back_eval_results(env, tmp, model, evals[0])
        ours = sorted((r["config"], r["metric"], r["value"], r["name"], r["source"])
                      for r in index if r["url"].startswith(hub.url))
        assert ours == [("adept_emotion_female", "accuracy", 0.55, None, "adept-eval"),
                        ("adept_syntactic_phrasing_male", "accuracy", 0.25, None, "adept-eval")
                        ], index
        assert all(r["url"].endswith("/runs/flat-tts/2099-01-01T00-00-00.000000")
                   for r in index if r["url"].startswith(hub.url)), index
        assert sorted(((r["config"], r["metric"], r["value"], r["source"]) for r in index
                       if not r["url"].startswith(hub.url)), key=repr) == kept, index
        assert {e["task"]: e["value"] for e in entries} == {
            "adept_emotion_female": 0.55, "adept_syntactic_phrasing_male": 0.25}


def test_a_limited_run_is_not_written_to_a_model_card_as_a_full_evaluation(hub, runs):
    """A run made with lm-eval's --limit answered some questions of each task: publish with
    --model-repo refuses it (one message naming the run and how much it answered, before
    anything is pushed) - its scores were written into the card's model-index as if the model
    had been evaluated on every question. --allow-partial writes them, each labelled partial."""
    import yaml

    tmp, env = runs
    out = tmp / "limited"
    _run(_lm_eval("--model", "adept-natural", "--tasks", TASKS, "--output_path", str(out),
                  "--log_samples", "--limit", "3"), env, tmp)
    results = next(out.rglob("results_*.json"))
    data = json.loads(results.read_text())
    assert data["adept_eval"]["suites"]["adept"]["limited"] == {"documents": 6, "of": 30}
    # as if made on the real corpus: the synthetic stand-in's scores are never written anyway
    data["adept_eval"]["suites"]["adept"]["corpus"]["synthetic"] = False
    results.write_text(json.dumps(data))
    _run([sys.executable, "-c", "from huggingface_hub import HfApi; "
          "HfApi().create_repo('alice/limited-tts')"], env, tmp)
    args = (str(out), "--repo", "adept-lab/limited-results", "--model-repo", "alice/limited-tts",
            "--benchmark-dataset", "adept-lab/ADEPT")
    done = _run(_adept_eval("publish", *args), env, tmp, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    line, = done.stderr.strip().splitlines()
    assert line.startswith("error: adept-natural (") and str(results) in line, line
    assert "partial run" in line and "answered 6 of 30 questions" in line, line
    assert "--allow-partial" in line and "Traceback" not in done.stderr
    assert hub.repo("adept-lab/limited-results") is None  # nothing pushed, not even the run
    assert "README.md" not in hub.repo("alice/limited-tts", "model").files
    # asked for explicitly: written, and each score says it is partial wherever it is shown
    done = _run(_adept_eval("publish", *args, "--allow-partial"), env, tmp)
    assert ("wrote 2 scores to alice/limited-tts, 2 of them labelled partial (run with "
            "--limit: 6 of 30 questions)") in done.stdout, done.stdout
    model = hub.repo("alice/limited-tts", "model")
    card = model.files["README.md"].decode()
    index = yaml.safe_load(card.split("---")[1])["model-index"][0]["results"]
    names = sorted(m["name"] for r in index for m in r["metrics"])
    assert names == ["accuracy (partial: run with lm-eval --limit, 3 of 10 questions)",
                     "accuracy (partial: run with lm-eval --limit, 3 of 20 questions)"], index
    evals = [p for p in model.files if p.startswith(".eval_results/")]
    entries = yaml.safe_load(model.files[evals[0]])
    assert len(entries) == 2 and all(
        e["notes"].startswith("partial: run with lm-eval --limit, 3 of ") for e in entries), entries


def test_failed_push_is_retried_and_never_loses_local_results(hub, runs):
    tmp, env = runs
    folder = tmp / "out" / "adept-natural"
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and "hub_upload" not in str(p)}
    hub.fail_commits = 2  # two 503s, then it works
    _run(_adept_eval("publish", str(folder), "--repo", "adept-lab/retry-results", "--no-details"),
         env, tmp)
    assert hub.repo("adept-lab/retry-results") is not None
    hub.fail_commits = 1000
    done = _run(_adept_eval("publish", str(folder), "--repo", "adept-lab/retry-results"), env, tmp,
                check=False)
    hub.fail_commits = 0
    assert done.returncode != 0 and "Nothing local was changed" in done.stderr
    after = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and "hub_upload" not in str(p)}
    assert after == before
    # the prepared upload stays in hub_upload/, and the same command pushes it once the Hub is
    # back (as docs/hub.md promises)
    assert any((folder / "hub_upload").rglob("*")), "the prepared upload was not kept"
    pushed_before = set(hub.repo("adept-lab/retry-results").files)
    _run(_adept_eval("publish", str(folder), "--repo", "adept-lab/retry-results"), env, tmp)
    pushed_after = set(hub.repo("adept-lab/retry-results").files)
    assert pushed_after > pushed_before  # the per-question details arrived this time


def test_a_missing_or_refused_token_fails_at_once_for_python_callers(hub, runs):
    """write_model_results (any Hub call adept-eval retries) without a token: huggingface_hub's
    "no token" error is an OSError, and was retried with back-off (~7 s) as if the network had
    failed, then reported as "failed after 4 attempts". Now it is one message at once, as is a
    token the Hub refuses (401). Counted, not timed: the retries adept-eval logs and the
    requests the Hub received."""
    tmp, env = runs
    env = {k: v for k, v in env.items() if k not in ("HF_TOKEN", "HF_TOKEN_PATH")}
    env["HF_HOME"] = str(tmp / "python-not-logged-in")
    code = textwrap.dedent("""
        import json, logging, os, sys
        from adept_eval.errors import PublishError
        from adept_eval.results.publish import write_model_results
        from adept_eval.results.runs import load_run

        retries = []
        class Retries(logging.Handler):
            def emit(self, record):
                retries.append(record.getMessage())
        logging.getLogger("adept_eval.results.publish").addHandler(Retries())
        run = load_run(sys.argv[1])
        out = []
        for token in (None, "hf_refused_token_0123456789abcdef"):
            if token:
                os.environ["HF_TOKEN"] = token
            retries.clear()
            try:
                write_model_results(run, "alice/flat-tts", results_repo="adept-lab/x",
                                    path_in_repo="runs/x", benchmark_dataset="adept-lab/ADEPT")
                out.append({"error": None})
            except PublishError as exc:
                out.append({"error": str(exc), "retries": list(retries)})
        print(json.dumps(out))
    """)
    before = len(hub.requests)
    done = _run([sys.executable, "-c", code, str(tmp / "out" / "flat-tts")], env, tmp)
    missing, refused = json.loads(done.stdout)
    assert missing["retries"] == [] and refused["retries"] == [], (missing, refused)
    assert missing["error"].startswith("who am I: no Hugging Face token - set HF_TOKEN"), missing
    assert refused["error"].startswith(
        "who am I: the Hugging Face Hub refused the token (HTTP 401"), refused
    assert "hf_refused_token" not in refused["error"]
    # no request without a token; one whoami with the refused one, never repeated
    assert hub.requests[before:] == ["GET /api/whoami-v2"], hub.requests[before:]


def test_leaderboard_local_and_from_the_hub(hub, runs):
    tmp, env = runs
    _run(_adept_eval("publish", str(tmp / "out" / "adept-natural"), "--repo", "adept-lab/lb-runs"),
         env, tmp)
    _run(_adept_eval("publish", str(tmp / "out" / "flat-tts"), "--repo", "adept-lab/lb-runs"), env, tmp)
    _run(_adept_eval("publish", str(tmp / "human"), "--repo", "adept-lab/lb-runs"), env, tmp)
    out = tmp / "lb"
    printed = _run(_adept_eval("leaderboard", "--from-hub", "adept-lab/lb-runs", "-o", str(out),
                               "--push", "adept-lab/leaderboard"), env, tmp).stdout
    assert "adept-natural" in printed
    rows = list(__import__("csv").DictReader(open(out / "leaderboard.csv")))
    by = {(r["system"], r["listener"].split()[0]): r for r in rows}
    # partial runs (2 of 12 tasks) on the synthetic corpus: shown, never ranked
    for key in (("adept-natural", "acoustic"), ("flat-tts", "acoustic")):
        assert by[key]["adept_rank"] == "" and by[key]["adept_unranked"].startswith("partial")
        assert by[key]["adept_synthetic"] == "True" and len(by[key]["adept_corpus"]) == 64
    assert float(by[("adept-natural", "acoustic")]["adept_acc"]) > \
        float(by[("flat-tts", "acoustic")]["adept_acc"])
    # another scorer, with its own identity recorded by the listener
    human = by[("copy-tts", "human")]
    assert "responses_file=answers.csv" in human["listener"]
    assert float(human["adept_acc"]) == pytest.approx(0.5) and human["adept_n"] == "40"
    md = (out / "leaderboard.md").read_text()
    assert "ADEPT runs not ranked" in md and "partial" in md
    png = (out / "leaderboard.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    lb = hub.repo("adept-lab/leaderboard")
    assert {"leaderboard.csv", "leaderboard.parquet", "leaderboard.png", "README.md"} <= set(lb.files)
    # the same from local folders
    _run(_adept_eval("leaderboard", str(tmp / "out"), str(tmp / "human"), "-o",
                             str(tmp / "lb2")), env, tmp)
    assert (tmp / "lb2" / "leaderboard.csv").read_text().count("\n") == 4


def test_speech_judge_space_loads_with_evaluate(hub, tmp_path):
    env = _env(hub, tmp_path)
    _run([sys.executable, str(ROOT / "scripts" / "publish_speech_judge_space.py"), "--repo",
          "adept-lab/speech_judge"], env, tmp_path)
    space = hub.repo("adept-lab/speech_judge", "space")
    assert {"speech_judge.py", "app.py", "README.md", "requirements.txt"} <= set(space.files)
    compile(space.files["app.py"].decode(), "app.py", "exec")
    done = _run([sys.executable, "-c", "import evaluate; m = evaluate.load('adept-lab/speech_judge'); "
                 "print(type(m).__name__, m.name)"], env, tmp_path)
    assert "SpeechJudge" in done.stdout


def test_the_secret_scan_finds_a_leak():
    """The scan that runs when the module's Hub closes (the ``hub`` fixture) does catch a key."""
    class Leaky:
        token = "hf_leaky"
        uploaded = [("a/b", "results.json", b'{"key": "' + OPENAI_SECRET.encode() + b'"}')]

    with pytest.raises(AssertionError):
        assert_nothing_secret(Leaky)


def test_publish_refuses_files_containing_secrets(tmp_path, monkeypatch):
    from adept_eval.secrecy import find_secrets

    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok_1234567890")
    (tmp_path / "a.json").write_text('{"leak": "tok_1234567890"}')
    (tmp_path / "b.json").write_text("{}")
    found = find_secrets(tmp_path)
    assert len(found) == 1 and "a.json" in found[0] and "MY_SERVICE_TOKEN" in found[0]
    # a server option written with its password (lm-eval records options verbatim)
    (tmp_path / "c.json").write_text('{"judge_base_url": "https://bob:hunter2pw@j.example/v1"}')
    found = find_secrets(tmp_path)
    assert len(found) == 2 and "c.json (a password in a URL)" in found[1]
    assert "hunter2pw" not in " ".join(found)


def test_report_prints_n_intervals_and_pooled_groups(runs):
    tmp, env = runs
    out = _run(_adept_eval("report", str(tmp / "out" / "flat-tts")), env, tmp).stdout
    assert "emotion_female" in out and "95% CI" in out and "chance" in out
    assert "pooled" in out and "adept " in out.replace("\n", " ")
    assert "SYNTHETIC" in out and "partial" in out and "features-v" in out
    # the tutorial's table: every subcategory with its n, its exact interval and its p
    # (lm-eval's own table prints these accuracies bare)
    from scipy.stats import binomtest

    results = json.loads(next((tmp / "out" / "flat-tts").rglob("results_*.json")).read_text())
    assert "recognition accuracy (the tutorial's table)" in out
    for sub in ("anger", "fear", "joy", "sadness"):
        acc = results["results"]["adept_emotion_female"][f"acc_{sub},none"]
        k = round(acc * 5)
        ci = binomtest(k, 5).proportion_ci(0.95, method="exact")
        row = f"emotion_female  {sub}"
        line = next(x for x in out.splitlines() if x.strip().startswith(row.strip()[:14]) and
                    f" {sub} " in f" {x} ")
        assert line.split()[2:5] == ["5", f"{acc:.3f}", f"{ci.low:.2f}-{ci.high:.2f}"], line
    # a folder with two systems: the newest run by timestamp, and the report says which
    out = _run(_adept_eval("report", str(tmp / "out")), env, tmp).stdout
    assert "run: flat-tts" in out and "newest of 2" in out


def test_a_damaged_samples_file_is_named(runs, tmp_path):
    """Every reader of logged samples (report, leaderboard, compare) names the file and the
    line of a damaged one - it said only 'Unterminated string starting at ...'."""
    tmp, env = runs
    copy = tmp_path / "flat-tts"
    shutil.copytree(tmp / "out" / "flat-tts", copy)
    damaged = sorted(copy.rglob("samples_adept_emotion_female_*.jsonl"))[0]
    damaged.write_text(damaged.read_text()[:2000])
    for args in (("report", str(copy)), ("leaderboard", str(copy), "-o", str(tmp_path / "lb"))):
        done = subprocess.run(_adept_eval(*args), env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 2, done.stderr[-2000:]
        assert f"{damaged}:1: not a logged sample, the file is damaged" in done.stderr, args
        assert "Traceback" not in done.stderr


def test_corpus_dataset_pushed_to_the_hub(hub, corpus, tmp_path):
    env = _env(hub, tmp_path, ADEPT_EVAL_CORPUS=str(corpus.root))
    _run([sys.executable, str(ROOT / "scripts" / "publish_corpus.py"), "--repo-id", "adept-lab/ADEPT",
          "--local-dir", str(tmp_path / "ds"), "--license", "cc-by-4.0"], env, tmp_path)
    repo = hub.repo("adept-lab/ADEPT")
    assert "recordings/test-00000-of-00001.parquet" in repo.files
    assert "adept_propositional_attitude_male/test-00000-of-00001.parquet" in repo.files
    assert "license: cc-by-4.0" in repo.files["README.md"].decode()
    # anyone can read it back through huggingface_hub, audio bytes and all
    done = _run([sys.executable, "-c", (
        "import io, pyarrow.parquet as pq, soundfile as sf; from huggingface_hub import hf_hub_download; "
        "p = hf_hub_download('adept-lab/ADEPT', 'adept_emotion_male/test-00000-of-00001.parquet', "
        "repo_type='dataset'); t = pq.read_table(p).to_pylist(); "
        "a, r = sf.read(io.BytesIO(t[0]['stimulus_audio'][0]['bytes'])); print(len(t), r)")],
        env, tmp_path)
    assert done.stdout.split() == ["20", "44100"]


def test_vstyle_downloads_from_the_hub(tmp_path):
    """The real loading code: snapshot_download of one language folder of zhanjun/VStyle."""
    from conftest import shared_or_skip

    examples = shared_or_skip("data", "vstyle_examples", "en")
    staged = tmp_path / "VStyle" / "en"
    (staged / "wav").mkdir(parents=True)
    shutil.copy(examples / "metadata_sample.jsonl", staged / "metadata.jsonl")
    for mp3 in sorted((examples / "wav").glob("role_play-*"))[:3]:
        shutil.copy(mp3, staged / "wav" / mp3.name)
    (tmp_path / "VStyle" / "zh").mkdir()
    (tmp_path / "VStyle" / "zh" / "metadata.jsonl").write_text("")
    with HubServer(users={"hf_vstyle_owner_token_0123456789": {"name": "zhanjun", "orgs": []}}) as hub:
        env = _env(hub, tmp_path)
        _run([sys.executable, "-c",
              "from huggingface_hub import HfApi; api = HfApi(); "
              "api.create_repo('zhanjun/VStyle', repo_type='dataset'); "
              f"api.upload_folder(repo_id='zhanjun/VStyle', repo_type='dataset', folder_path={str(tmp_path / 'VStyle')!r})"],
             env, tmp_path)
        env.pop("HF_TOKEN")  # the dataset is public: reading needs no token
        done = _run([sys.executable, "-c",
                     "from adept_eval.corpora.vstyle import load_records, locate; p = locate('en'); "
                     "r = load_records(p); import pathlib; "
                     "print(len(r), sum(pathlib.Path(x.audio_path).exists() for x in r), "
                     "sorted(q.name for q in p.parent.iterdir()))"], env, tmp_path)
    assert done.stdout.split()[:2] == ["33", "0"]  # all 33 records; instruction audio not uploaded
    assert "'en'" in done.stdout and "'zh'" not in done.stdout  # only the language asked for


def _closed_port() -> int:
    """A loopback port nothing listens on: a Hub that is down."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_push_without_a_token_is_refused_before_any_network_call(hub, runs):
    """No HF_TOKEN and no `hf auth login`: one message saying so, before any request - not a
    401 from the Hub after it, nor four retries against a Hub that is down. A login's token
    file is found as huggingface_hub finds it, and the token is never printed."""
    tmp, env = runs
    home = tmp / "not-logged-in"
    env = {k: v for k, v in env.items() if k not in ("HF_TOKEN", "HF_TOKEN_PATH")}
    env["HF_HOME"] = str(home)
    before = set(hub.repos)
    commands = [("publish", str(tmp / "out" / "flat-tts"), "--repo", "alice/no-token"),
                ("leaderboard", str(tmp / "out"), "-o", str(tmp / "lb-no-token"), "--push",
                 "alice/no-token-lb")]
    for endpoint in (hub.url, f"http://127.0.0.1:{_closed_port()}"):
        for args in commands:
            done = _run(_adept_eval(*args), {**env, "HF_ENDPOINT": endpoint}, tmp, check=False)
            assert done.returncode == 2, done.stderr
            line, = done.stderr.strip().splitlines()
            assert line.startswith("error: ") and "no Hugging Face token - set HF_TOKEN or log in" \
                in line and "hf auth login" in line, done.stderr
            assert "401" not in done.stderr and "attempts" not in done.stderr
    assert set(hub.repos) == before and not (tmp / "lb-no-token").exists()
    # `hf auth login` writes the token to $HF_HOME/token: that is a token too
    home.mkdir(exist_ok=True)
    (home / "token").write_text(hub.token)
    done = _run(_adept_eval("publish", str(tmp / "out" / "flat-tts"), "--repo",
                            "alice/token-file"), {**env, "HF_ENDPOINT": hub.url}, tmp)
    assert hub.repo("alice/token-file") is not None
    assert hub.token not in done.stdout + done.stderr


def test_publish_refuses_a_run_holding_a_key_in_an_option_value(hub, runs):
    """A run made before lm_eval refused them may hold a key inside an option value - a
    tts-command template's ``--api-key X`` in results' config, a server URL's ``?token=X`` -
    which no environment variable names: the upload is refused, naming the file, before any
    push, by the rule the options are refused with."""
    tmp, env = runs
    for n, (value, said) in enumerate([
            ("command=bin/mytts.py --api-key mysupersecretvalue99 --out {output},name=t3",
             "the value of --api-key"),
            ("path=x,judge_base_url=http://127.0.0.1:9/v1?token=mysecretvalue123",
             "the URL parameter token=")]):
        folder = tmp / f"keyed-{n}"
        shutil.copytree(tmp / "out" / "flat-tts", folder,
                        ignore=shutil.ignore_patterns("hub_upload"))
        results = next(folder.rglob("results_*.json"))
        data = json.loads(results.read_text())
        data["config"]["model_args"] = value
        results.write_text(json.dumps(data))
        before = set(hub.repos)
        done = _run(_adept_eval("publish", str(folder), "--repo", f"adept-lab/keyed-{n}"), env,
                    tmp, check=False)
        assert done.returncode == 2, done.stderr
        line, = done.stderr.strip().splitlines()
        assert line.startswith("error: refusing to upload") and "results.json" in line, line
        assert said in line and "secretvalue" not in line, line
        assert set(hub.repos) == before


@pytest.mark.parametrize("option, value", [("--model-repo", "bad id!"), ("--model-repo", "x"),
                                           ("--repo", "a/b/c")])
def test_publish_checks_repo_ids_before_pushing_anything(hub, runs, option, value):
    """A --model-repo the Hub would refuse was found only after the dataset was pushed, then
    reported as a repo belonging to someone else, exit 0. Both ids are checked first: exit 2,
    one message naming the option, nothing pushed."""
    tmp, env = runs
    before = (set(hub.repos), len(hub.uploaded))
    args = {"--repo": "adept-lab/ids-checked", "--model-repo": "adept-lab/ids-model", option: value}
    done = _run(_adept_eval("publish", str(tmp / "out" / "flat-tts"),
                            *[x for kv in args.items() for x in kv]), env, tmp, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    line, = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {option} {value!r}: not a Hugging Face repo id"), line
    assert (set(hub.repos), len(hub.uploaded)) == before


def test_a_damaged_results_file_is_named_not_skipped(hub, runs, tmp_path):
    """A truncated results file - lm-eval stopped while writing it - was skipped without a word:
    report and publish used (and pushed) the older run beside it, the leaderboard left its
    system out, and a folder holding only it was 'no lm-eval results_*.json in it'. The newest
    run damaged is refused (it is the run the user means); an older one is named in a warning."""
    tmp, env = runs
    newer = tmp_path / "newer"
    shutil.copytree(tmp / "out" / "flat-tts", newer)
    good = next(newer.rglob("results_*.json"))
    cut = good.with_name("results_2027-01-01T00-00-00.000000.json")
    cut.write_text(good.read_text()[:500])
    only = tmp_path / "only"
    only.mkdir()
    shutil.copy(cut, only / cut.name)
    uploads = len(hub.uploaded)
    for args, where in ((("report", str(newer)), cut), (("report", str(only)), only / cut.name),
                        (("publish", str(newer), "--repo", "alice/x"), cut),
                        (("leaderboard", str(tmp / "out" / "adept-natural"), str(only), "-o",
                          str(tmp_path / "lb")), only / cut.name)):
        done = _run(_adept_eval(*args), env, tmp_path, check=False)
        assert done.returncode == 2, (args, done.stdout[-1000:], done.stderr[-2000:])
        assert str(where) in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(hub.uploaded) == uploads
    # the intact run named explicitly is used; an older damaged file is only warned about
    done = _run(_adept_eval("report", str(newer), "--run", good.stem[len("results_"):]), env,
                tmp_path)
    older = tmp_path / "older"
    shutil.copytree(tmp / "out" / "flat-tts", older)
    old_cut = next(older.rglob("results_*.json")).with_name(
        "results_2001-01-01T00-00-00.000000.json")
    old_cut.write_text("{")
    done = _run(_adept_eval("report", str(older)), env, tmp_path)
    assert str(old_cut) in done.stderr


def test_publish_audio_from_another_folder_and_a_missing_sample(hub, runs, systems, tmp_path):
    """A run made with a relative path= logs relative audio paths: publish --audio run from
    another folder uploaded none of them, and a sample deleted after the run was left out
    without a word. Now the paths resolve from where the run's results lie, and a missing file
    is refused, named."""
    tmp, env = runs
    made = tmp_path / "made"
    made.mkdir()
    shutil.copytree(systems["flat"], made / "my_tts")
    _run(_lm_eval("--model", "audio-dir", "--model_args", "path=my_tts,name=rel-tts", "--tasks",
                  "adept_emotion_female", "--output_path", "out", "--log_samples"), env, made)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = made / "out" / "rel-tts"
    _run(_adept_eval("publish", str(run), "--repo", "alice/rel", "--audio"), env, elsewhere)
    uploaded = [p for p in hub.repo("alice/rel").files if "/audio/" in p]
    assert len(uploaded) == 25, uploaded  # every stimulus of the task
    gone = sorted((made / "my_tts").rglob("*.wav"))[0]
    gone.unlink()
    before = len(hub.uploaded)
    done = _run(_adept_eval("publish", str(run), "--repo", "alice/rel2", "--audio"), env,
                elsewhere, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "1 of the run's 25 audio files are missing" in done.stderr
    assert str(gone) in done.stderr and "Traceback" not in done.stderr
    assert len(hub.uploaded) == before
    # a sample re-synthesised since the run (another system's file in its place) is refused
    # too: its bytes are not those the run scored (the logged outputs record their sha256)
    shutil.copyfile(systems["copy"] / gone.relative_to(made / "my_tts"), gone)
    changed = sorted((made / "my_tts").rglob("*.wav"))[1]
    shutil.copyfile(systems["copy"] / changed.relative_to(made / "my_tts"), changed)
    done = _run(_adept_eval("publish", str(run), "--repo", "alice/rel3", "--audio"), env,
                elsewhere, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "2 of the run's 25 audio files have changed since the run scored them" in done.stderr
    assert str(gone) in done.stderr and str(changed) in done.stderr
    assert len(hub.uploaded) == before


def test_leaderboard_lists_runs_whose_samples_do_not_match_apart_and_names_dropped_runs(
        runs, tmp_path):
    """Samples cut short (lines removed from one task's file) or a samples file lost were
    ranked as complete on a subset; two runs of one system given explicitly became one row, the
    other dropped without a word."""
    tmp, env = runs
    cut = tmp_path / "cut"
    shutil.copytree(tmp / "out" / "flat-tts", cut)
    samples = next(cut.rglob("samples_adept_emotion_female_*.jsonl"))
    samples.write_text("".join(samples.read_text().splitlines(keepends=True)[:-3]))
    lost = tmp_path / "lost"
    shutil.copytree(tmp / "out" / "adept-natural", lost)
    next(lost.rglob("samples_adept_syntactic_phrasing_male_*.jsonl")).unlink()
    done = _run(_adept_eval("leaderboard", str(cut), str(lost), "-o", str(tmp_path / "lb")),
                env, tmp_path)
    rows = {r["system"]: r for r in __import__("csv").DictReader(
        open(tmp_path / "lb" / "leaderboard.csv"))}
    assert "adept_emotion_female: 17 logged samples, the results say 20" in \
        rows["flat-tts"]["adept_unranked"]
    # its figures are the results', not the cut samples' (n 162 of 165, their accuracy)
    from adept_eval.corpora import spec

    res = __import__("json").loads(next(cut.rglob("results_*.json")).read_text())["results"]
    parts = [(res[t]["acc,none"], res[t]["n,none"]) for t in spec.TASKS if t in res]
    assert int(rows["flat-tts"]["adept_n"]) == sum(n for _, n in parts)
    assert float(rows["flat-tts"]["adept_acc"]) == pytest.approx(
        sum(a * n for a, n in parts) / sum(n for _, n in parts), abs=1e-9)
    assert "adept_syntactic_phrasing_male: no samples file" in \
        rows["adept-natural"]["adept_unranked"]
    # the same system twice, by two explicit paths: the older run is named, not dropped silently
    again = _as_real_run(tmp / "out" / "flat-tts", tmp_path / "again",
                         stamp="2030-01-01T00-00-00.000000", date=1.9e9)
    first = next((tmp / "out" / "flat-tts").rglob("results_*.json"))
    done = _run(_adept_eval("leaderboard", str(first), str(again), "-o", str(tmp_path / "lb2")),
                env, tmp_path)
    assert f"{first} not ranked: an older run of the same system (flat-tts)" in done.stderr


def test_scores_on_vstyles_published_sample_never_reach_a_model_card(hub, tmp_path):
    """A run over VStyle's published examples (metadata_sample.jsonl: 33 instructions) wrote
    its scores to the model card as results on zhanjun/VStyle, like a run of the benchmark."""
    from adept_eval.corpora.vstyle import CATEGORIES

    env = _env(hub, tmp_path)
    tasks = [f"vstyle_en_{c}" for c in CATEGORIES]
    results = {t: {"score,speech_judge": 3.5, "n,speech_judge": 8, "n_failed,speech_judge": 0}
               for t in tasks}
    data = {"results": results, "configs": {},
            "config": {"model": "audio-dir", "model_args": {"name": "kimi"}},
            "adept_eval": {"system": "kimi", "version": "test", "suites": {"vstyle": {
                "tasks": tasks, "complete": True,
                "scorer": {"backend": "openai", "model": "judge-x"},
                "corpus": {"name": "VStyle-en", "sha256": "ab" * 32,
                           "file": "metadata_sample.jsonl", "synthetic": False,
                           "sample": True}}}}}
    run = tmp_path / "kimi"
    run.mkdir()
    (run / "results_2026-01-01T00-00-00.json").write_text(json.dumps(data))
    script = textwrap.dedent(f"""
        from huggingface_hub import HfApi
        from adept_eval.results.publish import write_model_results
        from adept_eval.results.runs import load_run
        HfApi().create_repo("alice/kimi-sample")
        written, note = write_model_results(load_run({str(run)!r}), "alice/kimi-sample",
                                            results_repo="alice/r", path_in_repo="runs/k",
                                            benchmark_dataset=None)
        print(written, note)
    """)
    out = _run([sys.executable, "-c", script], env, tmp_path).stdout
    assert out.startswith("False no scores written; 4 VStyle scores skipped: the run used "
                          "VStyle's published sample (metadata_sample.jsonl"), out
    assert not [p for p in hub.repo("alice/kimi-sample", "model").files
                if p.startswith(".eval_results/")]
