"""Publish the ``prosody_transfer`` metric as a Hugging Face Space in evaluate's module layout.

Afterwards ``evaluate.load("<org>/prosody_transfer")`` works for anyone (with adept-eval
installed), and the Space shows a Gradio widget: upload a synthesised utterance and its
reference (optionally the other candidate references), get every graded figure. The Space's card
is the module card shipped with the package (adept_eval/metrics/prosody_transfer/README.md).
No key is needed: the metric runs locally on the Space's CPU.

    python scripts/publish_prosody_transfer_space.py --repo my-org/prosody_transfer [--local-dir out/]
"""

from __future__ import annotations

import sys

from adept_eval import __version__
from adept_eval.results.publish import publish_metric_space
from adept_eval.harness.startup import prosody_transfer_path

APP = '''import evaluate
import gradio as gr

metric = evaluate.load("prosody_transfer.py")


def score(sample, reference, others):
    if not sample or not reference:
        return [], "Upload a synthesised utterance and its reference."
    out = metric.compute(predictions=[sample], references=[reference],
                         others=[list(others or [])], cache_dir="")
    item = out["items"][0]
    if item["status"] != "ok":
        return [], "failed: " + item["detail"]
    rows = [[m["name"], item[m["name"]], m["unit"],
             {True: "higher", False: "lower", None: "closer to 0"}[m["higher_is_better"]]]
            for m in out["metrics"]]
    return rows, f"{item['n_frames']} aligned frames, {item['n_voiced_both']} voiced in both"


with gr.Blocks(title="prosody_transfer") as demo:
    gr.Markdown("# prosody_transfer\\nReference-aligned prosody errors of synthesised speech.")
    with gr.Row():
        sample = gr.Audio(type="filepath", label="synthesised utterance")
        reference = gr.Audio(type="filepath", label="reference (same sentence)")
    others = gr.File(file_count="multiple", type="filepath",
                     label="other candidate references (optional: for prosody_distance)")
    button = gr.Button("Score")
    table = gr.Dataframe(headers=["figure", "value", "unit", "better"], label="figures")
    note = gr.Textbox(label="notes")
    button.click(score, [sample, reference, others], [table, note])

demo.launch()
'''


def main(argv: list[str] | None = None) -> int:
    module = prosody_transfer_path()
    card = (module.parent / "README.md").read_text(encoding="utf-8").replace(
        "# offline, with adept-eval installed", f"# needs adept-eval>={__version__} installed")
    return publish_metric_space(argv, name="prosody_transfer", module=module, app=APP, card=card,
                                description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
