"""Publish the ``prosody_transfer`` metric as a Hugging Face Space in evaluate's module layout.

Afterwards ``evaluate.load("<org>/prosody_transfer")`` works for anyone (with adept-eval
installed), and the Space shows a Gradio widget: upload a synthesised utterance and its
reference (optionally the other candidate references), get every graded figure. The Space's card
is the module card shipped with the package (adept_eval/metrics/prosody_transfer/README.md).
No key is needed: the metric runs locally on the Space's CPU.

    python scripts/publish_prosody_transfer_space.py --repo my-org/prosody_transfer [--local-dir out/]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from adept_eval import __version__
from adept_eval.lm_eval_plugin import prosody_transfer_path

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


def card(repo: str) -> str:
    """The module card, with its usage pointing at the published Space."""
    text = (prosody_transfer_path().parent / "README.md").read_text(encoding="utf-8")
    text = text.replace('evaluate.load("prosody_transfer")   # offline, with adept-eval installed',
                        f'evaluate.load("{repo}")   # needs adept-eval>={__version__} installed')
    return text


def build(folder: Path, repo: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(prosody_transfer_path(), folder / "prosody_transfer.py")
    (folder / "app.py").write_text(APP, encoding="utf-8")
    (folder / "requirements.txt").write_text(f"adept-eval>={__version__}\n", encoding="utf-8")
    (folder / "README.md").write_text(card(repo), encoding="utf-8")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="Space id, e.g. my-org/prosody_transfer")
    parser.add_argument("--local-dir", help="build here (default: a temporary folder)")
    parser.add_argument("--no-push", action="store_true")
    args = parser.parse_args(argv)
    folder = build(Path(args.local_dir or tempfile.mkdtemp(prefix="prosody-transfer-space-")),
                   args.repo)
    print(f"Space files in {folder}")
    if not args.no_push:
        from adept_eval.hub import push_space

        push_space(folder, args.repo, "prosody_transfer metric")
        print(f"published: evaluate.load({args.repo!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
