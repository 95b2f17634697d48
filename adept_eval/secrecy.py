"""Secrets: recognising them in option names, option values, commands, URLs and files.

Secrets never travel as options or land in results: a key whose *name* looks secret
(``api_key``, ``token``, ``password``...) or whose *value* looks like a credential or holds one
(``sk-...``, ``hf_...``, ``AIza...``, ``--api-key X`` in a command, ``?token=X`` in a URL, or
the value of a secret environment variable) is refused before anything is written or logged;
users name the environment variable instead (``*_api_key_env=OPENAI_API_KEY``).
``redact_words`` is that one rule: options are refused by it, tts-command's recorded template is
redacted by it, and publishing refuses to upload a file it flags (``find_secrets``).

Standard library only, so every layer may use it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from adept_eval.errors import SettingsError

_SECRET_WORDS = {"key", "apikey", "token", "secret", "password", "passwd", "passphrase",
                 "credential", "credentials", "auth", "authorization", "bearer", "cookie",
                 "signature", "sig"}
# a word ending so is secret too (``hftoken``, ``accesstoken``, ``dbpassword``); not ``tokens``
_SECRET_ENDINGS = ("token", "apikey", "password", "passwd", "secret")
#: a password written into a URL (``https://user:password@host``): refused in options (it is a
#: credential like the others below), and a file holding one is never uploaded
#: (``find_secrets``)
_URL_CREDENTIALS = r"[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@\"']+:[^/\s@\"']+@"
URL_CREDENTIALS = re.compile(_URL_CREDENTIALS.encode())
_SECRET_VALUE = re.compile(
    r"(?<![A-Za-z0-9])(sk-[A-Za-z0-9_\-]{12,}|hf_[A-Za-z0-9]{16,}|AIza[0-9A-Za-z_\-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9\-]{10,}|Bearer\s+(?!<redacted>)\S{8,}"
    rf"|{_URL_CREDENTIALS})")
_ENV_SECRET_NAME = re.compile(r"(TOKEN|KEY|SECRET|PASSWORD)", re.IGNORECASE)


def secret_name(key: str) -> bool:
    """Tell whether an option's name says it holds a secret.

    ``api_key``, ``hf_token``, ``llm_api_key``, ``password``: yes; ``api_key_env``,
    ``key_file``, ``token_path``, ``max_tokens``: no (the first three name where a secret is
    kept - what a user should pass instead of the secret -, the last is a count).

    Args:
        key: The option's name (dashes and underscores alike).

    Returns:
        Whether it names a secret.
    """
    parts = [p for p in re.split(r"[_\-.]", key.lower()) if p]
    if not parts or parts[-1] in ("env", "file", "path", "dir"):
        return False
    return (any(p in _SECRET_WORDS or p.endswith(_SECRET_ENDINGS) for p in parts)
            or "apikey" in key.lower().replace("_", ""))


def environment_secrets() -> dict[str, str]:
    """Collect the secrets the environment holds.

    Returns:
        Variable name -> value, for each variable whose name looks secret (``TOKEN``,
        ``KEY``, ``SECRET``, ``PASSWORD``) and whose value is long enough to matter (8
        characters or more).
    """
    return {k: v for k, v in os.environ.items() if _ENV_SECRET_NAME.search(k) and len(v) >= 8}


REDACTED = "<redacted>"
# ``--api-key`` / ``--token=`` / ``password=``: an option name as a command line writes one
_OPTION_NAME = re.compile(r"-{0,2}[A-Za-z][A-Za-z0-9_.\-]*")
# ``?token=X`` / ``&api_key=X`` in a URL
_QUERY_PARAMETER = re.compile(r"(?<=[?&;])([A-Za-z][A-Za-z0-9_.\-]*)=([^&#\s\"'<>]+)")


def placeholder(word: str) -> bool:
    """Tell a template's placeholder (``{text}``, ``{output}``), never a secret.

    Args:
        word: A word of a command.

    Returns:
        Whether the word is exactly one ``{name}``.
    """
    return re.fullmatch(r"\{\w+\}", word) is not None


def redact_words(words: list[str], keep=placeholder) -> tuple[list[str], list[str]]:
    """Replace the secrets in a command line or URL by ``<redacted>``.

    This is the one rule for secrets, shared by the option check (``secret_value``: refused
    before lm-eval logs it), ``tts_command.redact_command`` (the template recorded with each
    sample) and ``find_secrets`` (files refused for upload), so what one lets through the
    others do too.

    Secret: the value after an option named like a secret (``--api-key X``, ``--token=X``,
    ``password=X``; named as ``secret_name`` decides, so ``--api-key-env NAME`` and
    ``--max-tokens 5`` are not), a URL query parameter so named (``?token=X``, ``&api_key=X``),
    the word after ``Bearer``, a credential-shaped string (``sk-...``, ``hf_...``,
    ``user:pass@`` in a URL) and the value of a secret-named environment variable. A value
    ``keep`` accepts (a template's placeholder), one starting with ``-`` (the next option, so
    the first was a flag) and ``<redacted>`` itself are not secrets.

    Args:
        words: a command's arguments.
        keep: a function telling whether a value is no secret (default: a template's
            ``{placeholder}``).

    Returns:
        The words with each secret replaced by ``<redacted>``, and, per secret, what held it
        (never the secret itself).
    """
    env = sorted(environment_secrets().items(), key=lambda kv: len(kv[1]), reverse=True)
    out: list[str] = []
    found: list[str] = []
    after: str | None = None  # the secret option the previous word was
    for word in words:
        if after is not None:
            option, after = after, None
            if word and not word.startswith("-") and _secret_candidate(word, keep):
                out.append(REDACTED)
                found.append(next((f"the value of ${var}" for var, secret in env
                                   if secret in word), f"the value of {option}"))
                continue
        word, after = _redact_option(word, keep, found)
        word = _redact_query(word, found)
        word = _redact_environment(word, env, found)
        out.append(_redact_credentials(word, found))
    return out, found


def _secret_candidate(value: str, keep) -> bool:
    """Whether ``value``, held by a secret-named option, is a secret: not a value ``keep``
    accepts and not ``<redacted>`` already."""
    return not keep(value) and value != REDACTED


def _redact_option(word: str, keep, found: list[str]) -> tuple[str, str | None]:
    """Redact the value of a secret-named ``name=value`` word, noting it in ``found``.

    Returns:
        The word, redacted if it holds a secret, and the option whose value the next word is
        (``Bearer``, or a secret-named ``--option`` given without ``=``), else None.
    """
    after = word if word.lower() == "bearer" else None  # "Bearer TOKEN" given as two words
    name, eq, value = word.partition("=")
    if _OPTION_NAME.fullmatch(name) and secret_name(name.lstrip("-")):
        if not eq and name.startswith("-"):
            after = name
        elif eq and value and _secret_candidate(value, keep):
            word = f"{name}={REDACTED}"
            found.append(f"the value of {name}")
    return word, after


def _redact_query(word: str, found: list[str]) -> str:
    """``word`` with the value of each secret-named URL query parameter redacted, each noted
    in ``found``."""
    def query(match):
        if not secret_name(match.group(1)) or match.group(2) == REDACTED:
            return match.group(0)
        found.append(f"the URL parameter {match.group(1)}=")
        return f"{match.group(1)}={REDACTED}"

    return _QUERY_PARAMETER.sub(query, word)


def _redact_environment(word: str, env: list[tuple[str, str]], found: list[str]) -> str:
    """``word`` with each secret environment value in ``env`` (longest first) redacted, each
    noted in ``found``."""
    for var, secret in env:
        if secret in word:
            word = word.replace(secret, REDACTED)
            found.append(f"the value of ${var}")
    return word


def _redact_credentials(word: str, found: list[str]) -> str:
    """``word`` with each credential-shaped string redacted, each noted in ``found`` by its
    first four characters."""
    for match in _SECRET_VALUE.finditer(word):
        found.append(f"a credential ({match.group(1)[:4]}...)")
    return _SECRET_VALUE.sub(REDACTED, word)


def command_words(text: str) -> list[str]:
    """Split ``text`` into a command's words.

    Args:
        text: A command line.

    Returns:
        Its words as a shell splits them (as tts-command splits its template), or split at
        white space when the shell rules cannot split it (an unmatched quote).
    """
    import shlex

    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def secret_value(value) -> str | None:
    """Tell whether an option's value is, or holds, a credential (``redact_words``'s rule).

    Args:
        value: The value (read as text).

    Returns:
        Why it looks secret ("contains a credential (sk-a...)", never the secret), or None.
    """
    found = redact_words(command_words(str(value)))[1]
    if not found:
        return None
    # "contains a credential (sk-a...)", "contains the value of --api-key"
    return "contains " + ", ".join(dict.fromkeys(found))


def refuse_secrets(options: dict, where: str = "--model_args/--metadata") -> None:
    """Refuse options whose name or value looks secret.

    Args:
        options: Option name -> value (None: no options).
        where: Where the options were given, for the message.

    Raises:
        SettingsError: An option's name or value looks secret; the message lists each and
            says how to pass a key instead, never repeating a value.
    """
    bad = []
    for key, value in (options or {}).items():
        if secret_name(str(key)):
            bad.append(f"{key!r} is a secret-looking option name")
        else:
            why = secret_value(value)
            if why:
                bad.append(f"the value of {key!r} {why}")
    if bad:
        raise SettingsError(
            f"refusing secrets in {where}: " + "; ".join(bad) + ". Secrets come only from the "
            "environment: put the key in an environment variable and name it, e.g. "
            "judge_api_key_env=OPENAI_API_KEY, llm_api_key_env=..., api_key_env=... "
            "(HF_TOKEN is read from the environment by huggingface_hub); tts-command's "
            "command inherits the environment, so export the key (MYTTS_API_KEY=...) and have "
            "the program, or a wrapper script, read it there.")


#: results and samples as lm-eval writes them: text whose strings are options and commands
_OPTION_FILES = {".json", ".jsonl"}


def find_secrets(folder: Path) -> list[str]:
    """Find the files under ``folder`` that must not be uploaded: those holding a secret's
    value, or a password written into a URL (a server option given as
    ``https://user:password@host``).

    A results or samples file (.json, .jsonl) is also read word by word with the rule options
    are refused by (``redact_words``): one written by hand, or by a run that did not refuse
    them, may hold ``--api-key X`` in a tts-command template or ``?token=X`` in a server URL,
    and those are refused for upload too. Other files (a Space's code, parquet) get only the
    two checks above: code is full of ``api_key=...`` that is no secret.

    Args:
        folder: The folder about to be uploaded.

    Returns:
        One ``path (what)`` entry per finding, files in sorted order.

    Raises:
        OSError: A file cannot be read.
    """
    secrets = environment_secrets()
    found = []
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        found += _file_secrets(path, secrets)
    return found


def _file_secrets(path: Path, secrets: dict[str, str]) -> list[str]:
    """``find_secrets``' entries for one file: each secret environment value it holds, then a
    password in a URL or, for a results or samples file, the secrets ``redact_words`` finds."""
    data = path.read_bytes()
    found = [f"{path} ({name})" for name, value in secrets.items() if value.encode() in data]
    if URL_CREDENTIALS.search(data):
        found.append(f"{path} (a password in a URL)")
    elif path.suffix in _OPTION_FILES:
        # JSON's quotes, commas and escapes end a word, as white space does
        words = re.split(r"[\s\"',\\]+", data.decode("utf-8", "replace"))
        what = [w for w in redact_words(words)[1] if "$" not in w]  # $NAME: reported above
        if what:
            found.append(f"{path} ({'; '.join(dict.fromkeys(what))})")
    return found
