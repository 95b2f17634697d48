"""Responses mirrored to a private Hugging Face Hub dataset while the test runs.

For a server whose disk may vanish (a Docker Space restarts on a fresh disk): every few minutes
huggingface_hub's ``CommitScheduler`` pushes a snapshot of the responses (the export files,
every participant with their screening outcome) to a private dataset repo. The snapshot is
written inside the scheduler's lock, so a push never sees a half-written file. The SQLite file
itself is never uploaded (a live WAL database is not a consistent file). The token comes from
the environment (``HF_TOKEN`` or a ``hf auth login``), as everywhere in adept-eval.
"""

from __future__ import annotations

from pathlib import Path

from adept_eval.errors import UserError

MIRROR_DIR = "mirror"


class MirrorError(UserError, RuntimeError):
    """The mirror's dataset cannot be used (public, or not reachable)."""


def ensure_private(repo_id: str) -> None:
    """Create ``repo_id`` as a private dataset, or check that the existing one is private.

    huggingface_hub's ``private=True`` applies only when it creates the repository: an existing
    public dataset would silently receive participant ids. So this asks the Hub first and
    refuses a public one."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError

    api = HfApi()
    try:
        info = api.repo_info(repo_id, repo_type="dataset")
    except RepositoryNotFoundError:
        api.create_repo(repo_id, repo_type="dataset", private=True, exist_ok=True)
        info = api.repo_info(repo_id, repo_type="dataset")
    if not info.private:
        raise MirrorError(f"--mirror-to {repo_id}: this dataset is public; responses hold "
                          "participant ids, so they are mirrored only to a private dataset "
                          "(make it private on the Hub, or name a new one)")


def start_mirror(config, store, folder: str | Path, repo_id: str, *, every_minutes: float = 5.0):
    """A running scheduler that pushes ``<folder>/mirror/`` to the private dataset ``repo_id``
    every ``every_minutes`` (and on ``trigger()``); stop it with ``stop()``."""
    from huggingface_hub import CommitScheduler

    from adept_eval.listening_test.export import export

    ensure_private(repo_id)

    class _Snapshotting(CommitScheduler):
        def push_to_hub(self):
            with self.lock:
                export(config, store, Path(self.folder_path) / "responses.csv", include_all=True)
            return super().push_to_hub()

    local = Path(folder) / MIRROR_DIR
    local.mkdir(parents=True, exist_ok=True)
    return _Snapshotting(repo_id=repo_id, repo_type="dataset", folder_path=local,
                         every=every_minutes, private=True, path_in_repo="",
                         squash_history=False)
