"""Every command block of README.md and of every documentation page runs, as written, through
the real executables.

The pages are README.md, then every ``docs/*.md`` page (in ``DOCS_ORDER``, then any other), the
task folders' READMEs and the metric cards. The blocks are read from the pages themselves, so
they cannot drift from what is tested. Each
```bash line (continuations joined) and each ```python block must match a rule in ``RULES``;
a block with no rule fails ``test_every_block_has_a_rule``, so a new README block cannot go
untested by accident. A rule says how the command runs:

- ``run``: exactly as written;
- ``adapted``: as written, plus the changes the rule lists and its reason (a stand-in service's
  URL where the README names a real one, a temporary folder for ``/tmp``);
- ``not run``: never, with the reason (the set-up commands that install or test this package).

Every command runs in one shared folder (the pages' relative paths, ``my_tts/``, ``out/``,
``answers.csv``..., exist there), page by page in that order, each page's blocks in its order, with the services a user would have replaced
by the loopback stand-ins of the repository's ``testing/`` through the variables they document:
``ADEPT_EVAL_ZENODO_URL`` (the corpus is "downloaded" from a Zenodo look-alike serving the
synthetic ADEPT), ``HF_ENDPOINT``/``HF_TOKEN`` (a Hub look-alike that also serves a small
``zhanjun/VStyle``), ``OPENAI_BASE_URL`` (the openai SDK's own variable) for OpenAI's API.
``lm_eval`` commands get ``--limit 2`` (two questions per task), the one change made to all of
them, to keep the runtime reasonable: it samples questions and changes nothing else. A command
whose adapted text is identical to one already run is not run twice (unless its block sets
variables with ``export``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LM_EVAL_LIMIT = 2
#: docs pages whose commands set up what later pages use come first
DOCS_ORDER = ("evaluating.md", "comparisons.md", "listeners.md", "listener-validity.md",
              "graded.md", "listening-test.md", "speech-judge.md", "hub.md", "offline.md",
              "reliability-and-speed.md", "python.md")


def pages() -> list[Path]:
    """README.md, the docs pages, the task READMEs and the metric cards, in running order."""
    docs = sorted((ROOT / "docs").glob("*.md"),
                  key=lambda p: (DOCS_ORDER.index(p.name) if p.name in DOCS_ORDER
                                 else len(DOCS_ORDER), p.name))
    return [README, *docs, *sorted((ROOT / "tasks").glob("*/README.md")),
            *sorted((ROOT / "adept_eval" / "metrics").glob("*/README.md"))]


#: fenced blocks that are not commands (and so are not run), by language
NOT_COMMANDS = {"": "plain text (the package layout)", "bibtex": "a citation",
                "text": "output or a command shown, not run (each says why nearby)"}
SHELL = {"bash", "sh", "shell"}
PYTHON = {"python", "py"}

HUB_TOKEN = "hf_readme_user_token_0123456789abcdef"
VSTYLE_TOKEN = "hf_vstyle_owner_token_0123456789"


@dataclass(frozen=True)
class Rule:
    pattern: str  # regex searched in the command line (or the whole python block)
    how: str  # "run" | "adapted" | "not run"
    reason: str = ""
    subs: tuple[tuple[str, str], ...] = ()  # (regex, replacement with {llm} {judge} {tmp})
    expect: tuple[str, ...] = ()  # what the output must contain (regexes)
    needs: tuple[str, str] | None = None  # (path, command making it) when run on its own


#: lm-eval's printed results table, with a metric row of ours (the run produced results)
LM_EVAL_TABLE = r"^\|.*\|\s*(acc|score)\s*\|"
JUDGE_URL = r"(judge_base_url=)http://localhost:8000/v1"
LLM_URL = r"(llm_base_url=)http://localhost:8000/v1"

RULES: tuple[Rule, ...] = (
    Rule(r"^pip install \. && adept-eval prepare && lm_eval", "adapted",
         "`pip install .` is the installation this test runs in (reinstalling would replace it); "
         "the rest of the main job runs as written",
         subs=((r"^pip install \. && ", ""),), expect=(r"adept\b",)),
    Rule(r"^pip install \"\.\[test\]\" && python -m pytest", "not run",
         "this is the test suite itself: running it from inside would recurse"),
    Rule(r"^python -m pytest (tests/scoring/listeners/test_acoustic\.py -n 0|-k hub)$", "not run",
         "part of the test suite itself: running it from inside would recurse (the modules run "
         "in the suite)"),
    Rule(r"^lm_eval .*listener=audio-llm llm_base_url=http://localhost:8000/v1", "adapted",
         "llm_base_url names a local vLLM server; here the loopback server answers",
         subs=((LLM_URL, r"\g<1>{llm}"),), expect=(LM_EVAL_TABLE,)),
    Rule(r"^lm_eval .*path=answers_v2/.*--tasks vstyle_en .*judge_base_url=http://localhost:8000/v1",
         "adapted", "answers_v2/ stands for a second version of the model's answers (here a copy "
         "of answers/); judge_base_url names a local vLLM server, here the loopback judge answers",
         subs=((JUDGE_URL, r"\g<1>{judge}"),), expect=(LM_EVAL_TABLE,),
         needs=("answers_v2", "cp -r answers answers_v2")),
    Rule(r"^lm_eval .*--metadata listener=human responses=answers-[\w-]+\.csv$", "adapted",
         "the listening test's export writes one answers file per system (answers-<system>.csv); "
         "here both runs score the sandbox's one answers file, answers.csv",
         subs=((r"responses=answers-[\w-]+\.csv", "responses=answers.csv"),),
         expect=(LM_EVAL_TABLE,)),
    Rule(r"^lm_eval .*path=/tmp/vstyle/answers.*--tasks vstyle_en .*"
         r"judge_base_url=http://localhost:8000/v1", "adapted",
         "tests write only inside their own temporary folder; judge_base_url names a local vLLM "
         "server, here the loopback judge answers",
         subs=((r"/tmp/", "{tmp}/"), (JUDGE_URL, r"\g<1>{judge}")), expect=(LM_EVAL_TABLE,)),
    Rule(r"^adept-eval make-synthetic --vstyle /tmp/vstyle$", "adapted",
         "tests write only inside their own temporary folder", subs=((r"/tmp/", "{tmp}/"),),
         expect=(r"synthetic VStyle written to .*: 32 spoken instructions",)),
    Rule(r"^adept-eval report vstyle-out/$", "run",
         expect=(r"overall \(en", r"SYNTHETIC stand-in corpus: not VStyle results",
                 r"vstyle_en_empathy")),
    Rule(r"^lm_eval .*--tasks vstyle_en .*judge_base_url=http://localhost:8000/v1", "adapted",
         "judge_base_url names a local vLLM server; here the loopback judge answers",
         subs=((JUDGE_URL, r"\g<1>{judge}"),), expect=(LM_EVAL_TABLE,)),
    Rule(r"^lm_eval --model (adept-natural|audio-dir|tts-command) ", "run",
         expect=(LM_EVAL_TABLE,)),
    Rule(r"^adept-eval prepare\b", "run", expect=(r"sha256: [0-9a-f]{64}",)),
    Rule(r"^adept-eval manifest\b", "run", expect=(r"195 stimuli to synthesise",)),
    Rule(r"^adept-eval check\b", "run", expect=(r"\b195/195 samples usable",)),
    Rule(r"^adept-eval questions\b", "run", expect=(r"\b\d+ questions written",)),
    Rule(r"^adept-eval ceiling --listener audio-llm", "adapted",
         "llm_base_url names a local vLLM server; here the loopback OpenAI-compatible server "
         "answers; like every lm_eval command, it asks only 2 questions per task",
         subs=((LLM_URL, r"\g<1>{llm}"), (r"$", f" --limit {LM_EVAL_LIMIT}")),
         expect=(r"Ceiling",)),
    Rule(r"^adept-eval judge-agreement ", "run", expect=(r"Spearman",)),
    Rule(r"^adept-eval compare out/my-tts out/adept-natural --json comparison\.json$", "run",
         expect=(r"accuracy, pooled", r"wrote comparison\.json")),
    Rule(r"^adept-eval compare people/my-tts people/adept-natural$", "run",
         expect=(r"each\s+within\s+the\s+design's\s+strata", r"accuracy, pooled")),
    Rule(r"^adept-eval agreement people/ out/my-tts out/adept-natural --json agreement\.json$",
         "run", expect=(r"agrees with each person", r"the systems' ranking",
                        r"rank correlation (says|would say) little",
                        r"wrote agreement\.json")),
    Rule(r"^adept-eval agreement out/my-tts --responses my-tts=answers\.csv$", "run",
         expect=(r"listener acoustic .*vs people", r"rank correlation .*little|One system")),
    Rule(r"^adept-eval compare vstyle/my-s2s vstyle/my-s2s-v2$", "run",
         expect=(r"score, overall", r"failed judgements \(never scored\)")),
    Rule(r"^adept-eval listening-test plan --difference 0\.10", "run",
         expect=(r"recommended: \d+ participants per system|not reached", r"power")),
    Rule(r"^adept-eval leaderboard out/ -o leaderboard/$", "run",
         expect=(r"written: ", r"rank")),
    Rule(r"^adept-eval report out/$", "run", expect=(r"emotion_female", r"prosody_distance",
                                                     r"SYNTHETIC", r"recognition accuracy")),
    Rule(r"^export OPENAI_API_KEY=\.\.\. GEMINI_API_KEY=\.\.\.$", "run"),
    Rule(r"^lm_eval --model openai-speech .*judge_backend=gemini", "adapted",
         "Gemini is not reachable here: the judge's documented judge_base_url option points "
         "the gemini backend at the loopback server (OpenAI's API is the loopback server too, "
         "through OPENAI_BASE_URL)", subs=((r"(--metadata )", r"\g<1>judge_base_url={judge} "),),
         expect=(LM_EVAL_TABLE,)),
    Rule(r"^lm_eval --model openai-speech --tasks adept ", "not run",
         "test_documented_commands.py::test_openai_speech_adept_command_as_documented runs it "
         "as written (with --limit 2) through the real lm_eval against a loopback server that "
         "checks what each request holds"),
    Rule(r"^adept-eval publish ", "run", expect=(r"pushed \d+ files",),
         needs=("out/my-tts", "lm_eval --model audio-dir --model_args path=my_tts/,name=my-tts "
                              "--tasks adept --output_path out/ --log_samples")),
    Rule(r"^adept-eval make-synthetic /tmp/ADEPT\.zip$", "adapted",
         "tests write only inside their own temporary folder", subs=((r"/tmp/", "{tmp}/"),)),
    Rule(r"^export ADEPT_EVAL_CORPUS=/tmp/ADEPT\.zip$", "adapted",
         "tests write only inside their own temporary folder", subs=((r"/tmp/", "{tmp}/"),)),
    Rule(r"^adept-eval prepare && lm_eval --model adept-natural --tasks adept ", "run"),
    # python blocks
    Rule(r'judge = evaluate\.load\("speech_judge"\)', "adapted",
         "Gemini is not reachable here: base_url (a documented compute() option) points the "
         "gemini backend at the loopback judge",
         subs=((r'backend="gemini",', 'backend="gemini", base_url="{judge}",'),)),
    Rule(r"from adept_eval import load_corpus", "run"),
    Rule(r"class CopyReference\(InProcessTTS\)", "run", expect=(r"^1\.0 ",)),
    Rule(r'metric = evaluate\.load\("prosody_transfer"\)', "run"),
    # the listening test: building runs here; serving waits for people until stopped, and
    # status/export/report need responses that participants gave through the served pages:
    # tests/listening_test/test_server.py runs `adept-eval listening-test run` as a real process and
    # tests/listening_test/test_workflow.py runs status/export/report as written, through the adept-eval
    # executable, after simulated participants took a served test
    Rule(r"^adept-eval listening-test build my_tts/ -o my_test$", "run",
         expect=(r"listening test built",)),
    Rule(r"^pip install \"\.\[listening-test\]\" && adept-eval listening-test run ", "not run",
         "serves until stopped; tests/listening_test/test_server.py runs `listening-test run` end to "
         "end (participants, SIGINT, export, report)"),
    Rule(r"^adept-eval listening-test serve ", "not run",
         "serves until stopped; tests/listening_test/test_server.py serves a built test"),
    Rule(r"^adept-eval listening-test (status|export|report) my_test", "not run",
         "needs responses given through the served pages: tests/listening_test/test_workflow.py runs these "
         "commands, as written, through the adept-eval executable after simulated participants "
         "took a served test"),
)


# ----------------------------------------------------------------------------- README parsing
@dataclass(frozen=True)
class Block:
    line: int  # where the block starts in its page
    lang: str
    text: str
    page: str = "README.md"  # relative to the repository root

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def commands(self) -> list[str]:
        """Shell: logical lines (continuations joined, comments dropped); Python: the block."""
        if self.lang in PYTHON:
            return [self.text]
        out, buf = [], ""
        for raw in self.text.splitlines():
            line = raw.rstrip()
            if line.endswith("\\"):
                buf += line[:-1].strip() + " "
                continue
            line = _strip_comment(buf + line.strip())
            buf = ""
            if line:
                out.append(line)
        return out


def _strip_comment(line: str) -> str:
    """Drop a shell comment (a ``#`` at a word start, outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.strip()


def readme_blocks() -> list[Block]:
    blocks = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(ROOT).as_posix()
        for m in re.finditer(r"^```([\w+-]*)[ \t]*\n(.*?)^```[ \t]*$", text, re.M | re.S):
            blocks.append(Block(text.count("\n", 0, m.start()) + 1, m.group(1).lower(),
                                m.group(2), name))
    return blocks


def command_blocks() -> list[Block]:
    return [b for b in readme_blocks() if b.lang in SHELL | PYTHON]


def rule_for(command: str) -> Rule | None:
    return next((r for r in RULES if re.search(r.pattern, command, re.M)), None)


def adapt(command: str, rule: Rule, places: dict[str, str]) -> str:
    for pattern, repl in rule.subs if places else ():
        command, n = re.subn(pattern, repl.format(**places), command, flags=re.M)
        assert n, f"rule {rule.pattern!r}: {pattern!r} no longer matches {command!r}"
    if not command.lstrip().startswith(("import", "from")) and "lm_eval " in command:
        # every lm_eval segment of a && chain gets the limit
        command = " && ".join(f"{seg.rstrip()} --limit {LM_EVAL_LIMIT}"
                              if seg.strip().startswith("lm_eval ") else seg
                              for seg in command.split(" && "))
    return command


# ----------------------------------------------------------------------------- the tests
def test_every_block_has_a_rule():
    unknown_lang = [f"{b.where}: ```{b.lang}" for b in readme_blocks()
                    if b.lang not in SHELL | PYTHON | set(NOT_COMMANDS)]
    missing = [f"{b.where}: {c.splitlines()[0][:100]}"
               for b in command_blocks() for c in b.commands if rule_for(c) is None]
    assert not unknown_lang, "blocks in a language this test does not know: " + "; ".join(unknown_lang)
    assert not missing, ("README commands with no rule in tests/docs/test_readme.py RULES (add one: "
                         "run, adapted with a reason, or not run with a reason):\n  "
                         + "\n  ".join(missing))
    assert command_blocks(), "README.md has no command blocks?"


def test_rules_all_used():
    """A rule that matches nothing any more is stale: the README changed under it."""
    commands = [c for b in command_blocks() for c in b.commands]
    stale = [r.pattern for r in RULES if not any(re.search(r.pattern, c, re.M) for c in commands)]
    assert not stale, f"rules matching no README command: {stale}"


def test_readme_is_a_front_page():
    """README.md stays a front page (the depth lives in docs/) and keeps its two set-up commands
    exactly: .ci/run runs the test command verbatim."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    setup = [c for b in command_blocks() if b.page == "README.md" for c in b.commands
             if c.startswith("pip install ")]
    assert setup == ["pip install . && adept-eval prepare && lm_eval --model adept-natural "
                     "--tasks adept --output_path out --log_samples",
                     'pip install ".[test]" && python -m pytest']
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert setup[1] in ci
    # under CI=true a skipped test fails (conftest.py): .ci/run sets it before the tests itself,
    # so a runner that does not export CI cannot let a missing dependency pass as a skip
    assert "export CI=true" in ci[:ci.index(setup[1])]


def test_every_relative_link_resolves():
    """Links between README, docs pages, task READMEs and metric cards point at files that
    exist (and, for #anchors into a page, at a heading it has)."""
    broken = []
    for page in pages():
        text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue  # http(s), mailto
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and file.suffix == ".md":
                heads = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                         for h in re.findall(r"^#+ (.*)$", file.read_text(encoding="utf-8"), re.M)}
                if anchor not in heads:
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_block_parser_joins_continuations_and_drops_comments():
    b = Block(1, "bash", "a --x 1 \\\n   --y '#2'   # note\n# only a comment\nb  # one\n")
    assert b.commands == ["a --x 1 --y '#2'", "b"]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory, synthetic_zip, synthetic_root):
    """The folder the README's commands run in, its inputs, and the stand-in services."""
    from adept_eval.corpora import spec
    from testing.hub_server import HubServer
    from testing.judge_server import JudgeServer
    from testing.zenodo_server import ZenodoServer

    tmp = tmp_path_factory.mktemp("readme")
    work = tmp / "work"
    work.mkdir()
    users = {HUB_TOKEN: {"name": "alice", "orgs": ["my-org"]},
             VSTYLE_TOKEN: {"name": "zhanjun", "orgs": []}}
    with ZenodoServer(spec.ZENODO_RECORD_ID, {"ADEPT.zip": synthetic_zip}) as zenodo, \
            HubServer(users=users) as hub, JudgeServer() as judge, JudgeServer() as llm:
        llm.responder = lambda body, audios, texts: "Answer: A"
        env = {k: v for k, v in os.environ.items()
               if not re.search(r"KEY|TOKEN|SECRET|PASSWORD|^ADEPT_EVAL_|^HF_|^VSTYLE", k)}
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        env.update({
            "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
                    f"{env.get('PATH', '')}",
            "ADEPT_EVAL_HOME": str(tmp / "home"), "ADEPT_EVAL_ZENODO_URL": zenodo.url,
            "HF_HOME": str(tmp / "hf"), "HF_ENDPOINT": hub.url, "HF_TOKEN": HUB_TOKEN,
            "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
            "OPENAI_BASE_URL": judge.url, "TQDM_DISABLE": "1", "PYTHONUNBUFFERED": "1"})
        _make_inputs(work, bin_dir, synthetic_root, hub, env)
        yield {"work": work, "env": env, "tmp": tmp, "done": {},
               "places": {"llm": llm.url, "judge": judge.url, "tmp": str(tmp)}}


def _make_inputs(work: Path, bin_dir: Path, corpus_root: Path, hub, env: dict) -> None:
    """What the README assumes the user has: samples, a synthesiser, answers, scores, VStyle."""
    import numpy as np
    import soundfile as sf

    from adept_eval.corpora.corpus import Corpus
    from adept_eval.corpora.questions import all_questions
    from adept_eval.corpora.synthetic import build_system

    build_system(work / "my_tts")  # a simulated system's samples, laid out as the manifest says
    # the prosody_transfer example's files: a system sample and natural references
    natural = corpus_root / "wav_44khz" / "emotion"
    for folder, name, source in (("tts", "happy_01", work / "my_tts" / "emotion" / "joy"),
                                 ("tts", "sad_01", work / "my_tts" / "emotion" / "sadness"),
                                 ("ref", "happy_01", natural / "joy"),
                                 ("ref", "sad_01", natural / "sadness"),
                                 ("ref", "angry_01", natural / "anger")):
        (work / folder).mkdir(exist_ok=True)
        shutil.copy(sorted(source.glob("*.wav"))[0], work / folder / f"{name}.wav")
    tts = bin_dir / "my_tts"  # a synthesiser with the README's command line: copies --ref
    tts.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import argparse, soundfile as sf
        p = argparse.ArgumentParser()
        p.add_argument("--text", required=True)
        p.add_argument("--ref", required=True)
        p.add_argument("--out", required=True)
        a = p.parse_args()
        data, rate = sf.read(a.ref)
        sf.write(a.out, data, rate)
        """))
    tts.chmod(0o755)
    # two participants' answers to every question (one always right, one always "A")
    corpus = Corpus(corpus_root)
    with open(work / "answers.csv", "w", encoding="utf-8") as fh:
        fh.write("participant,task,question_id,answer\n")
        for task, qs in all_questions(corpus).items():
            for q in qs:
                fh.write(f"p01,{task},{q.question_id},{q.answer_letter}\n")
                fh.write(f"p02,{task},{q.question_id},A\n")
    # speech_judge inputs and scores for judge-agreement
    t = np.arange(16000) / 16000
    (work / "answers").mkdir()
    sf.write(work / "answers" / "0001.wav", 0.2 * np.sin(2 * np.pi * 180 * t), 16000)
    items = [{"item_id": str(i), "score": 1 + i % 5, "instruction_type": f"role_play/type_{i % 2}",
              "status": "ok"} for i in range(12)]
    (work / "judge_result.json").write_text(json.dumps({"items": items}))
    (work / "human_scores.csv").write_text("id,score,instruction_type\n" + "".join(
        f"{i},{min(5, 1 + i % 5 + (i % 3 == 0))},role_play/type_{i % 2}\n" for i in range(12)))
    # VStyle's judge prompts, where the README's example points
    prompts = work / "path" / "to" / "vstyle" / "eval_prompts" / "en"
    prompts.mkdir(parents=True)
    from adept_eval.judge.prompt import builtin

    for category in ("acoustic_attributes", "instruction", "role_play", "empathy"):
        (prompts / f"{category}.txt").write_text(builtin().template, encoding="utf-8")
    # a small zhanjun/VStyle on the Hub look-alike: one instruction per category, and the
    # answers a user generated elsewhere, one per record (answers/<record id>.wav)
    staged = work.parent / "VStyle" / "en"
    (staged / "wav").mkdir(parents=True)
    records = [("acoustic_attributes/age", "acoustic_properties-age-1"),
               ("instruction/emotion", "instruction-emotion-1"),
               ("role_play/scenario", "role_playing-scenario-1"),
               ("empathy/anger", "empathy-anger-1")]
    with open(staged / "metadata.jsonl", "w", encoding="utf-8") as fh:
        for i, (ability, rid) in enumerate(records, 1):
            voice = 0.2 * np.sin(2 * np.pi * (150 + 20 * i) * t)
            sf.write(staged / "wav" / f"{rid}.wav", voice, 16000)
            sf.write(work / "answers" / f"{rid}.wav", voice[::-1].copy(), 16000)
            fh.write(json.dumps({"instruct_text": f"Say it in style {i}: hello.", "ability": ability,
                                 "instruct_id": 1, "instruct_audio_path": f"{rid}.wav"}) + "\n")
    upload = (f"from huggingface_hub import HfApi; api = HfApi(token={VSTYLE_TOKEN!r}); "
              "api.create_repo('zhanjun/VStyle', repo_type='dataset'); "
              f"api.upload_folder(repo_id='zhanjun/VStyle', repo_type='dataset', "
              f"folder_path={str(staged.parent)!r})")
    # the user's own model repo, which `adept-eval publish --model-repo` writes scores onto
    upload += f"; HfApi(token={HUB_TOKEN!r}).create_repo('my-org/my-tts')"
    done = subprocess.run([sys.executable, "-c", upload], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def _cases():
    out = []
    for b in command_blocks():
        first = b.commands[0].splitlines()[0] if b.commands else ""
        out.append(pytest.param(b, id=f"{b.page}:L{b.line}:{first[:40]}"))
    return out


@pytest.mark.parametrize("block", _cases())
def test_readme_block(block: Block, sandbox):
    """One README block, its commands in order in one shell (so ``export`` carries over)."""
    rules = [(c, rule_for(c)) for c in block.commands]
    if any(r is None for _, r in rules):
        pytest.fail("a command of this block has no rule (see test_every_block_has_a_rule)")
    runnable = [(c, r) for c, r in rules if r.how != "not run"]
    if not runnable:
        pytest.skip("not run: " + "; ".join(r.reason for _, r in rules))
    places, done = sandbox["places"], sandbox["done"]
    if block.lang in PYTHON:
        (command, rule), = runnable
        page = re.sub(r"\W", "_", block.page)
        script = sandbox["tmp"] / f"block_{page}_{block.line}.py"
        script.write_text(adapt(command, rule, places), encoding="utf-8")
        result = _run([sys.executable, str(script)], sandbox)
        _check(result, [rule], block)
        return
    for _, rule in runnable:
        if rule.needs and not (sandbox["work"] / rule.needs[0]).exists():
            _check(_run(["bash", "-c", adapt(rule.needs[1], rule, {})], sandbox), [], block)
    lines, used = [], []
    exports = any(c.startswith("export ") for c, _ in runnable)
    for command, rule in runnable:
        adapted = adapt(command, rule, places)
        if adapted in done and not exports:
            continue  # the same command already ran (and passed) for an earlier block
        lines.append(adapted)
        used.append(rule)
    if not lines:
        return
    script = "set -eo pipefail\n" + "".join(f"echo '+ '{shlex.quote(x)}\n{x}\n" for x in lines)
    result = _run(["bash", "-c", script], sandbox)
    _check(result, used, block)
    for x in lines:
        done[x] = True


def _run(args, sandbox):
    return subprocess.run(args, cwd=sandbox["work"], env=sandbox["env"], capture_output=True,
                          text=True, timeout=1200, stdin=subprocess.DEVNULL)


def _check(result, rules, block):
    where = block.where
    assert result.returncode == 0, (f"{where} failed (exit {result.returncode}):\n"
                                    f"--- stdout\n{result.stdout[-4000:]}\n"
                                    f"--- stderr\n{result.stderr[-6000:]}")
    for rule in rules:
        for pattern in rule.expect:
            assert re.search(pattern, result.stdout, re.M), \
                f"{where}: output lacks {pattern!r}:\n{result.stdout[-3000:]}"
