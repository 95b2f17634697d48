"""Responses mirrored to a private Hugging Face Hub dataset while the test runs.

For a server whose disk may vanish (a Docker Space restarts on a fresh disk): every few minutes
huggingface_hub's ``CommitScheduler`` pushes a snapshot of the responses (the export files,
every participant with their screening outcome) to a private dataset repo. The snapshot is
written inside the scheduler's lock, so a push never sees a half-written file. The SQLite file
itself is never uploaded (a live WAL database is not a consistent file). The token comes from
the environment (``HF_TOKEN`` or a ``hf auth login``), as everywhere in adept-eval.
"""

from __future__ import annotations

import sys
from pathlib import Path

from adept_eval.errors import MirrorError

MIRROR_DIR = "mirror"


def ensure_private(repo_id: str) -> None:
    """Create ``repo_id`` as a private dataset, or check that the existing one is private.

    huggingface_hub's ``private=True`` applies only when it creates the repository: an existing
    public dataset would silently receive participant ids. So this asks the Hub first and
    refuses a public one.

    Args:
        repo_id: The Hub dataset to mirror to (``owner/name``).

    Raises:
        MirrorError: The dataset exists and is public, or the token can neither see it nor
            create it (another owner's private dataset, or a namespace the token cannot
            write to).
    """
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    api = HfApi()
    try:
        info = api.repo_info(repo_id, repo_type="dataset")
    except RepositoryNotFoundError:
        try:
            api.create_repo(repo_id, repo_type="dataset", private=True, exist_ok=True)
            info = api.repo_info(repo_id, repo_type="dataset")
        except (RepositoryNotFoundError, HfHubHTTPError) as exc:
            raise MirrorError(
                f"--mirror-to {repo_id}: this token can neither see nor create that dataset "
                f"({type(exc).__name__}); name a dataset in a namespace the token may write "
                "to (HF_TOKEN / hf auth login)") from None
    if not info.private:
        raise MirrorError(f"--mirror-to {repo_id}: this dataset is public; responses hold "
                          "participant ids, so they are mirrored only to a private dataset "
                          "(make it private on the Hub, or name a new one)")


def start_mirror(config, store, folder: str | Path, repo_id: str, *, every_minutes: float = 5.0):
    """Start pushing snapshots of the responses to a private Hub dataset.

    Args:
        config: The test's design (``TestConfig``).
        store: The test's responses ``Store``.
        folder: The test folder; snapshots are written to its ``mirror/`` folder.
        repo_id: The private Hub dataset to push to.
        every_minutes: Minutes between pushes.

    Returns:
        A running ``CommitScheduler`` that pushes ``<folder>/mirror/`` every ``every_minutes``
        (and on ``trigger()``); ``stop()`` stops it.

    Raises:
        MirrorError: The dataset exists and is public.
    """
    from huggingface_hub import CommitScheduler

    from adept_eval.listening_test.export import export

    ensure_private(repo_id)

    class _Snapshotting(CommitScheduler):
        """A scheduler that writes a fresh snapshot, inside its lock, before each push, and
        pushes only while the dataset is private."""

        public = False

        def push_to_hub(self):
            """Check the dataset is still private (it may be made public while the test runs),
            then write the export files and push the folder (see ``CommitScheduler``); once
            it is found public, say so and never push again."""
            from huggingface_hub import HfApi

            if self.public or not HfApi().repo_info(repo_id, repo_type="dataset").private:
                if not self.public:
                    self.public = True
                    print(f"error: {repo_id} was made public: responses are no longer mirrored "
                          "to it (make it private again and restart the server)",
                          file=sys.stderr, flush=True)
                return None
            with self.lock:
                export(config, store, Path(self.folder_path) / "responses.csv", include_all=True)
            return super().push_to_hub()

    local = Path(folder) / MIRROR_DIR
    local.mkdir(parents=True, exist_ok=True)
    return _Snapshotting(repo_id=repo_id, repo_type="dataset", folder_path=local,
                         every=every_minutes, private=True, path_in_repo="",
                         squash_history=False)
