"""A Hugging Face Hub look-alike on 127.0.0.1, enough for huggingface_hub's real client.

Point the client at it with ``HF_ENDPOINT`` (and ``HF_HUB_DISABLE_XET=1``: there is no Xet
storage here). It keeps repos in memory and speaks the JSON/NDJSON the client expects for:
whoami, repo creation, pre-upload (every file is "regular", so contents arrive inline in the
commit), commits, repo info, tree listing, paths-info, and file resolution (HEAD/GET with
``X-Repo-Commit`` and ``ETag``). Writes need a known token. ``fail_commits`` makes the next
commits answer 503, to test retries; ``uploaded`` keeps every file ever committed, to scan it;
``requests`` is every request received (``"GET /api/whoami-v2"``), in order, to count calls.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlparse

from . import LoopbackServer

PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
PLURAL = {"models": "model", "datasets": "dataset", "spaces": "space"}


@dataclass
class Repo:
    repo_id: str
    repo_type: str
    private: bool = False
    sdk: str | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)

    @property
    def sha(self) -> str:
        return self.commits[-1] if self.commits else "0" * 40


class HubServer(LoopbackServer):
    def __init__(self, users: dict[str, dict] | None = None):
        # token -> {"name": user, "orgs": [...]}
        self.users = users or {"hf_loopback_token_0123456789abcdef": {"name": "alice",
                                                                     "orgs": ["adept-lab"]}}
        self.repos: dict[tuple[str, str], Repo] = {}
        self.uploaded: list[tuple[str, str, bytes]] = []
        self.fail_commits = 0
        self.requests: list[str] = []
        self.commit_attempts = 0
        self._lock = threading.Lock()
        self._serve(self._handler())

    @property
    def token(self) -> str:
        return next(iter(self.users))

    def repo(self, repo_id: str, repo_type: str = "dataset") -> Repo | None:
        return self.repos.get((repo_type, repo_id))

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            # ----------------------------------------------------------------- helpers
            def _send(self, status: int, body: bytes = b"", ctype: str = "application/json",
                      headers: dict | None = None, head: bool = False):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if not (head or getattr(self, "_is_head", False)):
                    self.wfile.write(body)
                self.wfile.flush()

            def _json(self, status: int, payload, headers: dict | None = None):
                self._send(status, json.dumps(payload).encode(), headers=headers)

            def _error(self, status: int, message: str, code: str | None = None):
                headers = {"X-Error-Message": message}
                if code:
                    headers["X-Error-Code"] = code
                self._json(status, {"error": message}, headers)

            def _user(self):
                auth = self.headers.get("Authorization", "")
                token = auth.removeprefix("Bearer ").strip()
                return server.users.get(token)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))

            def _can_write(self, repo_id: str) -> bool:
                user = self._user()
                return bool(user) and repo_id.split("/")[0] in [user["name"], *user["orgs"]]

            def _info(self, repo: Repo) -> dict:
                siblings = [{"rfilename": p, "size": len(b)} for p, b in sorted(repo.files.items())]
                info = {"id": repo.repo_id, "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
                        "sha": repo.sha, "private": repo.private, "siblings": siblings,
                        "author": repo.repo_id.split("/")[0], "disabled": False, "gated": False,
                        "downloads": 0, "likes": 0, "tags": [],
                        "lastModified": "2026-01-01T00:00:00.000Z",
                        "createdAt": "2026-01-01T00:00:00.000Z"}
                if repo.repo_type == "model":
                    info["modelId"] = repo.repo_id
                if repo.repo_type == "space":
                    info["sdk"] = repo.sdk
                return info

            # ----------------------------------------------------------------- routes
            def do_HEAD(self):
                self._route("HEAD")

            def do_GET(self):
                self._route("GET")

            def do_POST(self):
                self._route("POST")

            def _route(self, method: str):
                self._is_head = method == "HEAD"  # HEAD answers carry headers only
                url = urlparse(self.path)
                path = unquote(url.path)
                with server._lock:
                    server.requests.append(f"{method} {path}")
                try:
                    if path == "/api/whoami-v2":
                        user = self._user()
                        if not user:
                            return self._error(401, "Invalid credentials in Authorization header")
                        return self._json(200, {
                            "type": "user", "name": user["name"], "fullname": user["name"],
                            "orgs": [{"name": o, "type": "org"} for o in user["orgs"]],
                            "auth": {"type": "access_token",
                                     "accessToken": {"displayName": "loopback", "role": "write"}}})
                    if path == "/api/validate-yaml" and method == "POST":
                        import yaml

                        content = json.loads(self._body() or b"{}").get("content", "")
                        header = content.split("---")[1] if content.startswith("---") else ""
                        try:
                            yaml.safe_load(header)
                        except yaml.YAMLError as exc:
                            return self._error(400, f"invalid card metadata: {exc}")
                        return self._json(200, {})
                    if path == "/api/repos/create" and method == "POST":
                        return self._create(json.loads(self._body() or b"{}"))
                    m = re.match(r"^/api/(models|datasets|spaces)/([^/]+/[^/]+)(/.*)?$", path)
                    if m:
                        return self._api(method, PLURAL[m.group(1)], m.group(2), m.group(3) or "",
                                         parse_qs(url.query))
                    m = re.match(r"^/(datasets/|spaces/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
                    if m:
                        rtype = {"datasets/": "dataset", "spaces/": "space"}.get(m.group(1) or "",
                                                                                  "model")
                        return self._resolve(method, rtype, m.group(2), m.group(4))
                    return self._error(404, f"no route for {method} {path}")
                except Exception as exc:  # a bug here should show up as a 500, not a hang
                    return self._error(500, f"loopback hub error: {exc!r}")

            def _create(self, payload: dict):
                if not self._user():
                    return self._error(401, "Invalid credentials in Authorization header")
                rtype = payload.get("type") or "model"
                repo_id = f"{payload.get('organization') or self._user()['name']}/{payload['name']}"
                url = f"{server.url}/{PREFIX[rtype]}{repo_id}"
                if not self._can_write(repo_id):
                    return self._error(403, f"You don't have the rights to create {repo_id}")
                with server._lock:
                    if (rtype, repo_id) in server.repos:
                        return self._json(409, {"error": "You already created this repo",
                                                "url": url})
                    server.repos[(rtype, repo_id)] = Repo(
                        repo_id, rtype, payload.get("visibility") == "private" or
                        bool(payload.get("private")), payload.get("sdk"))
                return self._json(200, {"url": url, "name": repo_id})

            def _api(self, method: str, rtype: str, repo_id: str, rest: str, query: dict):
                repo = server.repos.get((rtype, repo_id))
                if repo is None:
                    return self._error(404, f"Repository not found: {repo_id}", "RepoNotFound")
                if rest == "" or rest.startswith("/revision/"):
                    return self._json(200, self._info(repo))
                m = re.match(r"^/(preupload|commit|tree|paths-info)/([^/]+)(/.*)?$", rest)
                if not m:
                    return self._error(404, f"no route {rest}")
                action, sub = m.group(1), (m.group(3) or "").lstrip("/")
                if action in ("preupload", "commit") and not self._can_write(repo_id):
                    return self._error(403 if self._user() else 401, "write access denied")
                if action == "preupload":
                    files = json.loads(self._body())["files"]
                    return self._json(200, {"files": [
                        {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                         "oid": None} for f in files]})
                if action == "commit":
                    return self._commit(repo)
                if action == "tree":
                    entries = [{"type": "file", "path": p, "size": len(b),
                                "oid": hashlib.sha1(b).hexdigest()}
                               for p, b in sorted(repo.files.items())
                               if not sub or p.startswith(sub.rstrip("/") + "/")]
                    if "recursive" not in query or query["recursive"][0] in ("false", "False"):
                        prefix = sub.rstrip("/") + "/" if sub else ""
                        dirs = sorted({prefix + e["path"][len(prefix):].split("/")[0]
                                       for e in entries if "/" in e["path"][len(prefix):]})
                        entries = [e for e in entries if "/" not in e["path"][len(prefix):]]
                        entries += [{"type": "directory", "path": d, "size": 0,
                                     "oid": "0" * 40} for d in dirs]
                    return self._json(200, entries)
                # paths-info
                body = self._body().decode()
                wanted = parse_qs(body).get("paths", []) if body and not body.startswith("{") \
                    else json.loads(body or "{}").get("paths", [])
                return self._json(200, [{"type": "file", "path": p, "size": len(repo.files[p]),
                                         "oid": hashlib.sha1(repo.files[p]).hexdigest()}
                                        for p in wanted if p in repo.files])

            def _commit(self, repo: Repo):
                raw = self._body()
                with server._lock:
                    server.commit_attempts += 1
                    if server.fail_commits > 0:
                        server.fail_commits -= 1
                        return self._error(503, "Service temporarily unavailable")
                changes: dict[str, bytes | None] = {}
                summary = ""
                for line in raw.decode().splitlines():
                    if not line.strip():
                        continue
                    item = json.loads(line)
                    value = item.get("value", {})
                    if item["key"] == "header":
                        summary = value.get("summary", "")
                    elif item["key"] == "file":
                        changes[value["path"]] = base64.b64decode(value["content"])
                    elif item["key"] in ("deletedFile", "deletedFolder"):
                        changes[value["path"]] = None
                    elif item["key"] == "lfsFile":
                        return self._error(400, "this loopback hub takes regular uploads only")
                with server._lock:
                    for p, content in changes.items():
                        if content is None:
                            for key in [k for k in repo.files if k == p or k.startswith(p + "/")]:
                                repo.files.pop(key)
                        else:
                            repo.files[p] = content
                            server.uploaded.append((repo.repo_id, p, content))
                    sha = hashlib.sha1(f"{repo.sha}{summary}{time.time()}".encode()).hexdigest()
                    repo.commits.append(sha)
                return self._json(200, {"commitUrl": f"{server.url}/{PREFIX[repo.repo_type]}"
                                                     f"{repo.repo_id}/commit/{sha}",
                                        "commitOid": sha, "pullRequestUrl": None})

            def _resolve(self, method: str, rtype: str, repo_id: str, filename: str):
                repo = server.repos.get((rtype, repo_id))
                if repo is None:
                    return self._error(404, f"Repository not found: {repo_id}", "RepoNotFound")
                if filename not in repo.files:
                    return self._error(404, f"Entry not found: {filename}", "EntryNotFound")
                data = repo.files[filename]
                etag = hashlib.sha1(data).hexdigest()
                self._send(200, data, "application/octet-stream",
                           {"ETag": f'"{etag}"', "X-Repo-Commit": repo.sha,
                            "Accept-Ranges": "bytes"}, head=method == "HEAD")

        return Handler
