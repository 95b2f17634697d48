"""The audio-LLM listener and the openai-speech model against the loopback OpenAI-compatible
server (real HTTP, the real aiohttp client)."""

import hashlib
import re
import statistics

import pytest

from adept_eval.corpora import spec
from adept_eval.cli import main
from adept_eval.judge import JudgeConfig
from adept_eval.judge.runner import prepare_audio
from adept_eval.scoring.listeners.audio_llm import parse_letter
from testing.judge_server import JudgeServer
from conftest import run_lm_eval, shared_or_skip


def _oracle(corpus):
    """A fake audio LLM that 'hears' by audio hash: it knows each natural recording's
    subcategory and reads the target from the question's wording."""
    cfg = JudgeConfig(max_audio_seconds=60)
    label = {hashlib.sha256(prepare_audio(r.audio_path, cfg, "x")).hexdigest(): r.subcategory
             for r in corpus.recordings}
    options = {}
    for cls in spec.CLASSES.values():
        for sub, wording in cls.targets.items():
            if wording:
                options[wording] = sub
    for cname in ("topical_emphasis", "syntactic_phrasing", "marked_tonicity"):
        for block in corpus.prompts[cname].values():
            for sub, text in block.items():
                options.setdefault(text, sub)

    def respond(body, audios, texts):
        heard = [label[hashlib.sha256(a).hexdigest()] for a in audios]
        question = texts[-1]
        if len(audios) > 1:  # multi-stimulus: find the sample of the target subcategory
            target = next(sub for w, sub in options.items() if w in question)
            return f"I think it is this one.\nAnswer: {'ABCDE'[heard.index(target)]}"
        lines = re.findall(r"^([A-E])\. (.*)$", question, flags=re.M)
        for letter, text in lines:
            if options.get(text) == heard[0]:
                return f"Answer: {letter}"
        return "Answer: A"

    return respond


def test_parse_letter():
    assert parse_letter("blah\nAnswer: C", 5) == 2
    assert parse_letter("**Answer:** (b)", 3) == 1
    assert parse_letter(" D. ", 5) == 3
    assert parse_letter("Answer: E", 4) is None  # out of range
    assert parse_letter("I cannot tell", 4) is None


def test_audio_llm_listener_on_natural_recordings(use_corpus, tmp_path):
    with JudgeServer() as server:
        server.responder = _oracle(use_corpus)
        meta = {"listener": "audio-llm", "llm_base_url": server.url, "llm_model": "omni",
                "llm_cache": str(tmp_path / "l.sqlite")}
        res = run_lm_eval("adept-natural", ["adept_emotion_male", "adept_topical_emphasis_female"],
                          metadata=meta)
        for task in ("adept_emotion_male", "adept_topical_emphasis_female"):
            r = res["results"][task]
            assert r["acc,none"] == 1.0 and r["order_agreement,none"] == 1.0
        # 20 questions x 3 orders + 15 x 3 requests; a rerun is served from the cache
        assert server.requests == 20 * 3 + 15 * 3
        run_lm_eval("adept-natural", ["adept_emotion_male"], metadata=meta)
        assert server.requests == 105


def test_position_bias_is_exposed(use_corpus, tmp_path):
    with JudgeServer() as server:
        server.responder = lambda body, audios, texts: "Answer: A"  # always the first sample
        res = run_lm_eval("adept-natural", ["adept_emotion_female"],
                          metadata={"listener": "audio-llm", "llm_base_url": server.url,
                                    "llm_model": "biased", "llm_cache": ""})
    r = res["results"]["adept_emotion_female"]
    assert r["order_agreement,none"] == pytest.approx(1 / 3)  # three orders, three answers
    # three answers, one vote each: the tie goes to the question's own order, whose "A" is its
    # first sample, so the listener is right exactly where the answer is the first sample
    from adept_eval.corpora.questions import build_questions

    qs = build_questions(use_corpus, "adept_emotion_female")
    assert r["acc,none"] == pytest.approx(sum(q.answer == 0 for q in qs) / len(qs))
    assert r["acc,none"] < 0.5


def test_unparseable_replies_are_failures(use_corpus):
    with JudgeServer() as server:
        server.responder = lambda body, audios, texts: "It is hard to say."
        res = run_lm_eval("adept-natural", ["adept_syntactic_phrasing_male"],
                          metadata={"listener": "audio-llm", "llm_base_url": server.url,
                                    "llm_model": "m", "llm_cache": "", "orders": 2})
        assert server.requests == 10 * 2 * 3  # every order asked 1 + 2 re-asks
    r = res["results"]["adept_syntactic_phrasing_male"]
    assert r["failed,none"] == 10 and r["acc,none"] == 0.0


def test_ceiling_command_prints_the_table(use_corpus, capsys):
    assert main(["ceiling", "--tasks", "adept_marked_tonicity_female"]) == 0
    out = capsys.readouterr().out
    assert "marked_tonicity_female" in out and "1.000" in out


def test_openai_speech_model_on_vstyle(tmp_path):
    from adept_eval.corpora.vstyle import load_records

    folder = shared_or_skip("data", "vstyle_examples", "en")
    records = [r for r in load_records(folder) if r.category == "role_play"]
    cfg = JudgeConfig()
    with JudgeServer() as server:
        expected = []
        for rec in records:
            kimi = next(r for r in rec.responses if r.model_name == "Kimi")
            reply = prepare_audio(kimi.audio_path, cfg, "r")  # the model 'says' Kimi's answer
            server.speech[hashlib.sha256(prepare_audio(rec.audio_path, cfg, "i")).hexdigest()] = reply
            server.replay[hashlib.sha256(reply).hexdigest()] = kimi.judge_raw
            expected.append(kimi.judge_score)
        args = {"model": "omni-speech", "base_url": server.url, "cache_dir": str(tmp_path)}
        meta = {"vstyle_dir": str(folder), "judge_base_url": server.url, "judge_model": "j",
                "judge_cache": ""}
        res = run_lm_eval("openai-speech", ["vstyle_en_role_play"], model_args=args, metadata=meta)
        first = server.requests
        run_lm_eval("openai-speech", ["vstyle_en_role_play"], model_args=args, metadata=meta)
        assert server.requests - first == len(records)  # only the judge again: answers cached
    r = res["results"]["vstyle_en_role_play"]
    assert r["score_mean,speech_judge"] == pytest.approx(statistics.mean(expected))
    assert len(list(tmp_path.rglob("*.json"))) == len(records)  # transcripts kept
