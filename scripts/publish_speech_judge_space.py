"""Publish the ``speech_judge`` metric as a Hugging Face Space in evaluate's module layout.

Afterwards ``evaluate.load("<org>/speech_judge")`` works for anyone (with adept-eval installed),
and the Space shows a Gradio widget: upload a spoken response, type the instruction, get the
score and the judge's verdict. The widget's judge key comes from the Space's secrets
(GEMINI_API_KEY / OPENAI_API_KEY), never from this script.

    python scripts/publish_speech_judge_space.py --repo my-org/speech_judge [--local-dir out/]
"""

from __future__ import annotations

import sys

from adept_eval.results.publish import publish_metric_space
from adept_eval.harness.startup import speech_judge_path

APP = '''import os

import evaluate
import gradio as gr

judge = evaluate.load("speech_judge.py")


def rate(audio_path, instruction, instruction_type, backend, model, base_url):
    if not audio_path or not instruction.strip():
        return "-", "Upload a spoken response and type the instruction it answers."
    out = judge.compute(predictions=[audio_path], references=[instruction],
                        instruction_types=[instruction_type or "instruction"], backend=backend,
                        model=model or "", base_url=base_url or None, progress=False)
    item = out["items"][0]
    score = "failed: " + item["detail"] if item["status"] != "ok" else str(item["score"])
    return score, (item["verdicts"] or [""])[-1]


with gr.Blocks(title="speech_judge") as demo:
    gr.Markdown("# speech_judge\\nAn audio LLM rates a spoken response 1-5 (VStyle's judge).")
    with gr.Row():
        audio = gr.Audio(type="filepath", label="spoken response")
        with gr.Column():
            instruction = gr.Textbox(label="instruction (transcript)")
            itype = gr.Textbox(label="instruction type", value="instruction/emotion")
            backend = gr.Dropdown(["gemini", "openai"], value="gemini", label="backend")
            model = gr.Textbox(label="model (empty: backend default)")
            base_url = gr.Textbox(label="base URL (OpenAI-compatible servers)")
    button = gr.Button("Judge")
    score = gr.Textbox(label="score")
    verdict = gr.Textbox(label="verdict", lines=12)
    button.click(rate, [audio, instruction, itype, backend, model, base_url], [score, verdict])

demo.launch()
'''


def main(argv: list[str] | None = None) -> int:
    module = speech_judge_path()
    return publish_metric_space(argv, name="speech_judge", module=module, app=APP,
                                card=(module.parent / "README.md").read_text(encoding="utf-8"),
                                description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
