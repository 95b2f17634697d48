"""The listening test end to end: simulated participants take a built test over HTTP, and
what the commands report and export is what the server acknowledged."""

from __future__ import annotations

import asyncio
import csv
import json
from collections import Counter

import pytest

pytest.importorskip("starlette", reason="needs the listening-test extra (starlette)")
pytest.importorskip("httpx", reason="needs httpx (test extra)")

from adept_eval.listening_test import analysis
from adept_eval.listening_test.design import item_from

from .shared import ADMIN, TASKS


async def _simulate(app, config, people):
    import httpx

    from testing.crowd import AnswerKey, take_test

    key = AnswerKey(config)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://testserver") as c:
        return await asyncio.gather(*(take_test(c, key, pid, **kw) for pid, kw in people))


def test_screening_exclusions_and_export_scored_by_the_human_listener(
        test_dir, use_corpus, systems, tmp_path):
    """Simulated participants (some failing screening) take the test over HTTP; the export,
    scored by the `human` listener inside lm-eval, gives the accuracies counted independently
    from the answers the server acknowledged."""
    from conftest import run_lm_eval

    from adept_eval.listening_test.app import create_app
    from adept_eval.listening_test.export import export
    from adept_eval.listening_test.store import Store

    app = create_app(test_dir, admin_token=ADMIN, min_listening=0)
    config = app.state.config
    people = [(f"good{i}", {"skill": 0.5 + 0.08 * i, "seed": i}) for i in range(6)]
    people += [("deaf", {"headphones": False}), ("sleepy", {"attentive": False}),
               ("quitter", {"stop_after": 4})]
    outcomes = {o.participant: o for o in asyncio.run(_simulate(app, config, people))}
    assert all(outcomes[f"good{i}"].completion_code == "DONE1234" for i in range(6))
    assert outcomes["deaf"].stage == "screened_out" and not outcomes["deaf"].acknowledged
    store = Store(test_dir / "responses.sqlite")
    verdict = {p: s.screening for p, s in analysis.screen(config, store.participants(),
                                                           store.responses()).items()}
    assert verdict == {**{f"good{i}": "included" for i in range(6)},
                       "deaf": "failed headphone check", "sleepy": "failed attention checks",
                       "quitter": "incomplete"}

    # independent count: from the acknowledged answers and each participant's plan
    expect = Counter()
    for i in range(6):
        pid = f"good{i}"
        items = [item_from(d) for d in store.participant(pid).plan["items"]]
        for index, position in outcomes[pid].acknowledged:
            it = items[index]
            if it.kind == "question" and it.system == "copy":
                expect[(it.task, "n")] += 1
                expect[(it.task, "k")] += it.canonical(position) == it.answer
    paths = export(config, store, tmp_path / "answers.csv")
    assert [p.name for p in paths] == ["answers-copy.csv", "answers-flat.csv",
                                       "answers_participants.csv"]
    with open(paths[0], encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["screening"] for r in rows} == {"included"}
    assert len(rows) == sum(v for (t, m), v in expect.items() if m == "n")
    res = run_lm_eval("audio-dir", TASKS, model_args={"path": str(systems["copy"]),
                                                      "name": "copy"},
                      metadata={"listener": "human", "responses": str(paths[0])})["results"]
    a = analysis.analyse(config, store)
    for task in TASKS:
        n, k = expect[(task, "n")], expect[(task, "k")]
        assert n > 0
        assert res[task]["n,none"] == n
        assert res[task]["acc,none"] == pytest.approx(k / n)
        row = next(r for r in a.step4 if r.task == task and r.system == "copy"
                   and not r.subcategory)
        assert (row.responses, row.correct) == (n, k)
        # the report's interval and test are the lm_eval run's for the same responses:
        # clustered by participant and by sentence (they were a bootstrap over participants
        # and questions, which covered the truth 78-90% of the time)
        acc = next(r for r in a.accuracy if r.task == task and r.system == "copy"
                   and not r.subcategory)
        assert acc.participants >= 2 and 1 <= acc.stats.clusters <= 5
        assert (acc.stats.ci_low, acc.stats.ci_high, acc.stats.p_value) == pytest.approx(
            (res[task]["acc_ci_low,none"], res[task]["acc_ci_high,none"],
             res[task]["p_chance,none"]), rel=1e-9)
    with open(paths[-1], encoding="utf-8") as fh:
        ppl = {r["participant"]: r for r in csv.DictReader(fh)}
    assert ppl["deaf"]["screening"] == "failed headphone check"
    assert ppl["sleepy"]["catch_correct"] == "0"


def test_cli_build_status_export_report(corpus, systems, tmp_path, capsys, monkeypatch):
    import subprocess

    from adept_eval.cli import main
    from faults import console_script
    from adept_eval.listening_test.app import create_app

    out = tmp_path / "t"
    assert main(["listening-test", "build", "--corpus", str(corpus.root), "--seed", "1",
                 f"copy={systems['copy']}", "--tasks", "adept_marked_tonicity_female",
                 "-o", str(out)]) == 0
    assert main(["listening-test", "build", "--corpus", str(corpus.root),
                 f"copy={systems['copy']}", "-o", str(out)]) == 2  # never rebuilt in place
    assert "already holds" in capsys.readouterr().err
    assert main(["listening-test", "status", str(out)]) == 2  # nothing served yet
    app = create_app(out, admin_token="", min_listening=0)
    asyncio.run(_simulate(app, app.state.config, [(f"p{i}", {"seed": i}) for i in range(4)]))
    capsys.readouterr()
    # the documented commands (docs/listening-test.md), through the real executable
    out = out.rename(tmp_path / "my_test")

    def adept_eval(*args):
        done = subprocess.run([console_script("adept-eval"), "listening-test", *args],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    assert "included 4" in adept_eval("status", "my_test")
    assert "answers.csv: 40 rows" in adept_eval("export", "my_test", "-o", "answers.csv")
    text = adept_eval("report", "my_test")
    assert "marked_tonicity_female" in text and "95%" in text
    report = json.loads((out / "report" / "report.json").read_text())
    assert report["included_participants"] == 4 and report["step4"][0]["responses"] == 40
    assert (out / "report" / "adept_marked_tonicity_female.png").stat().st_size > 1000
    assert main(["listening-test", "build", "--corpus", str(corpus.root), "-o",
                 str(tmp_path / "u")]) == 2  # no system named
    assert main(["listening-test", "build", "--corpus", str(corpus.root), "--natural",
                 "--tasks", "nope", "-o", str(tmp_path / "v")]) == 2
    assert "unknown ADEPT task 'nope'" in capsys.readouterr().err


def test_status_and_report_print_every_figure_whole_and_names_literally(corpus, systems,
                                                                        tmp_path):
    """At 80 columns (a terminal, or redirected with COLUMNS=80) the tables cut figures short
    (``1…  96  0.6…``); a title holding ``[/]`` crashed them (Rich markup) and one holding
    ``[red]`` lost it; a system (named by its lm-eval run) holding ``$^^$`` crashed the charts
    (matplotlib's mathtext), and a long chart title was clipped at the figure's edges."""
    import dataclasses
    import re

    from adept_eval.cli import main
    from adept_eval.listening_test.app import create_app
    from adept_eval.listening_test.store import Store
    from faults import console_script
    from terminal import on_terminal, redirected

    title = "Pilot [/] [red]one[/red]"
    out = tmp_path / "t"
    assert main(["listening-test", "build", "--corpus", str(corpus.root), "--seed", "1",
                 "--title", title, f"copy={systems['copy']}",
                 f"flat-system-with-a-long-name={systems['flat']}",
                 "--tasks", "adept_marked_tonicity_female,adept_interpersonal_attitude_female",
                 "-o", str(out)]) == 0
    app = create_app(out, admin_token="", min_listening=0)
    asyncio.run(_simulate(app, app.state.config, [(f"participant-{i}", {"seed": i})
                                                  for i in range(5)]))
    exe = console_script("adept-eval")
    for command in (["status", str(out)], ["report", str(out)]):
        status, stdout, stderr = redirected([exe, "listening-test", *command], columns=80)
        assert status == 0, stderr
        status, text = on_terminal([exe, "listening-test", *command], columns=80)
        assert status == 0, text
        for printed in (stdout, text):
            assert "…" not in printed and "Traceback" not in printed
            assert printed.startswith(f"{title}: 5 participants")
        if command[0] == "report":
            report = json.loads((out / "report" / "report.json").read_text())
            for row in report["accuracy"]:
                figures = [f"{row['acc']:.3f}", f"{row['ci_low']:.2f}-{row['ci_high']:.2f}",
                           f"{row['participants']}", f"{row['n']}"]
                line = f"{row['n']}   {row['correct']}   {row['acc']:.3f}"
                for printed in (stdout, text):
                    assert all(f in printed for f in figures), (figures, printed)
                    assert re.search(" +".join(map(re.escape, line.split())), printed), line
            table_lines = [line for line in text.splitlines() if re.search(r"\d\.\d{3}", line)]
            assert table_lines and all(len(line) <= 80 for line in table_lines), text
    charts = sorted((out / "report").glob("*.png"))
    assert len(charts) == 2 and all(p.stat().st_size > 1000 for p in charts)

    config = app.state.config
    found = analysis.analyse(config, Store(out / "responses.sqlite"))
    renamed = {"copy": "p$^^$q", "flat-system-with-a-long-name": "flat"}
    weird = dataclasses.replace(config, systems=tuple(renamed[s] for s in config.systems))
    rows = [dataclasses.replace(r, system=renamed[r.system]) for r in found.accuracy]
    task = "adept_marked_tonicity_female"
    analysis.plot_task(weird, rows, task, tmp_path / "chart.png")
    assert (tmp_path / "chart.png").stat().st_size > 1000
    import matplotlib.pyplot as plt

    drawn = {}
    real_close = plt.close
    plt.close = lambda fig: drawn.setdefault("fig", fig)
    try:
        analysis.plot_task(weird, rows, task, tmp_path / "chart2.png")
    finally:
        plt.close = real_close
    fig = drawn["fig"]
    renderer = fig.canvas.get_renderer()
    title = fig.axes[0].title
    box = title.get_window_extent(renderer)
    assert "p$^^$q" in title.get_text().replace("\\$", "$")
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width, (box, fig.bbox.width)
    real_close(fig)
