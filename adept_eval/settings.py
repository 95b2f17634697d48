"""Which component owns each ``--model_args`` / ``--metadata`` key, and no secrets in either.

lm-eval hands every task loader one flat dict: ``--model_args`` merged with ``--metadata``. One
rule decides who owns each key:

- **model**: the keys given in ``--model_args`` (the start-up hook records them when
  ``simple_evaluate`` starts; without it, any option one of adept-eval's models declares);
- **run**: the suite's own keys (ADEPT: ``corpus``, ``listener``; VStyle: ``vstyle_dir``, and
  ``language``, which only the task sets: see ``TASK_KEYS``) and lm-eval's ``version``;
- **listener**: the options the chosen listener declares (its constructor's fields), e.g.
  ``cache_dir`` for ``acoustic``, ``llm_*`` for ``audio-llm``, ``responses`` for ``human``;
- **judge**: ``judge_*`` keys (the speech judge's settings).

A key nobody owns, or one owned by a listener the run does not use, is a ``SettingsError`` that
lists the valid keys. Nothing is silently dropped.

Secrets never travel as options: a key whose *name* looks secret (``api_key``, ``token``,
``password``...) or whose *value* looks like a credential or holds one (``sk-...``, ``hf_...``,
``AIza...``, ``--api-key X`` in a command, ``?token=X`` in a URL, or the value of a secret
environment variable; ``redact_words`` is that one rule, also used to redact tts-command's
recorded template and to refuse uploads) is refused before anything is written or logged; name
the environment variable instead (``*_api_key_env=OPENAI_API_KEY``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .errors import UserError
from .options import parse_model_args
from .suites import SUITES

# lm-eval's own task metadata, always present
LM_EVAL_KEYS = frozenset({"version", "config_source"})
JUDGE_PREFIX = "judge_"

_SECRET_WORDS = {"key", "apikey", "token", "secret", "password", "passwd", "passphrase",
                 "credential", "credentials", "auth", "authorization", "bearer", "cookie",
                 "signature", "sig"}
# a word ending so is secret too (``hftoken``, ``accesstoken``, ``dbpassword``); not ``tokens``
_SECRET_ENDINGS = ("token", "apikey", "password", "passwd", "secret")
#: a password written into a URL (``https://user:password@host``): refused in options (it is a
#: credential like the others below), and a file holding one is never uploaded
#: (``hub.find_secrets``)
_URL_CREDENTIALS = r"[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@\"']+:[^/\s@\"']+@"
URL_CREDENTIALS = re.compile(_URL_CREDENTIALS.encode())
_SECRET_VALUE = re.compile(
    r"(?<![A-Za-z0-9])(sk-[A-Za-z0-9_\-]{12,}|hf_[A-Za-z0-9]{16,}|AIza[0-9A-Za-z_\-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9\-]{10,}|Bearer\s+(?!<redacted>)\S{8,}"
    rf"|{_URL_CREDENTIALS})")
_ENV_SECRET_NAME = re.compile(r"(TOKEN|KEY|SECRET|PASSWORD)", re.IGNORECASE)


class SettingsError(UserError, ValueError):
    """A --model_args / --metadata key that no component owns, or one holding a secret."""


# ----------------------------------------------------------------------------- secrets
def secret_name(key: str) -> bool:
    """``api_key``, ``hf_token``, ``llm_api_key``, ``password``: yes; ``api_key_env``,
    ``key_file``, ``token_path``, ``max_tokens``: no (the first three name where a secret is
    kept - what a user should pass instead of the secret -, the last is a count)."""
    parts = [p for p in re.split(r"[_\-.]", key.lower()) if p]
    if not parts or parts[-1] in ("env", "file", "path", "dir"):
        return False
    return (any(p in _SECRET_WORDS or p.endswith(_SECRET_ENDINGS) for p in parts)
            or "apikey" in key.lower().replace("_", ""))


def environment_secrets() -> dict[str, str]:
    """Values of environment variables whose names look secret (long enough to matter)."""
    return {k: v for k, v in os.environ.items() if _ENV_SECRET_NAME.search(k) and len(v) >= 8}


REDACTED = "<redacted>"
# ``--api-key`` / ``--token=`` / ``password=``: an option name as a command line writes one
_OPTION_NAME = re.compile(r"-{0,2}[A-Za-z][A-Za-z0-9_.\-]*")
# ``?token=X`` / ``&api_key=X`` in a URL
_QUERY_PARAMETER = re.compile(r"(?<=[?&;])([A-Za-z][A-Za-z0-9_.\-]*)=([^&#\s\"'<>]+)")


def placeholder(word: str) -> bool:
    """``{text}``, ``{output}``: a template's placeholder, never a secret."""
    return re.fullmatch(r"\{\w+\}", word) is not None


def redact_words(words: list[str], keep=placeholder) -> tuple[list[str], list[str]]:
    """The one rule for secrets inside a command line or URL, shared by the option check
    (``secret_value``: refused before lm-eval logs it), ``tts_command.redact_command`` (the
    template recorded with each sample) and ``hub.find_secrets`` (files refused for upload),
    so what one lets through the others do too.

    ``words`` are a command's arguments. Secret: the value after an option named like a secret
    (``--api-key X``, ``--token=X``, ``password=X``; named as ``secret_name`` decides, so
    ``--api-key-env NAME`` and ``--max-tokens 5`` are not), a URL query parameter so named
    (``?token=X``, ``&api_key=X``), the word after ``Bearer``, a credential-shaped string
    (``sk-...``, ``hf_...``, ``user:pass@`` in a URL) and the value of a secret-named
    environment variable. A value ``keep`` accepts (a template's placeholder), one starting
    with ``-`` (the next option, so the first was a flag) and ``<redacted>`` itself are not
    secrets. Returns the words with each secret
    replaced by ``<redacted>`` and, per secret, what held it (never the secret)."""
    env = sorted(environment_secrets().items(), key=lambda kv: len(kv[1]), reverse=True)
    out: list[str] = []
    found: list[str] = []
    after: str | None = None  # the secret option the previous word was
    for word in words:
        if after is not None:
            option, after = after, None
            if word and not word.startswith("-") and not keep(word) and word != REDACTED:
                out.append(REDACTED)
                found.append(next((f"the value of ${var}" for var, secret in env
                                   if secret in word), f"the value of {option}"))
                continue
        if word.lower() == "bearer":  # "Bearer TOKEN" given as two words
            after = word
        name, eq, value = word.partition("=")
        if _OPTION_NAME.fullmatch(name) and secret_name(name.lstrip("-")):
            if not eq and name.startswith("-"):
                after = name
            elif eq and value and not keep(value) and value != REDACTED:
                word = f"{name}={REDACTED}"
                found.append(f"the value of {name}")

        def query(m):
            if not secret_name(m.group(1)) or m.group(2) == REDACTED:
                return m.group(0)
            found.append(f"the URL parameter {m.group(1)}=")
            return f"{m.group(1)}={REDACTED}"

        word = _QUERY_PARAMETER.sub(query, word)
        for var, secret in env:
            if secret in word:
                word = word.replace(secret, REDACTED)
                found.append(f"the value of ${var}")
        for m in _SECRET_VALUE.finditer(word):
            found.append(f"a credential ({m.group(1)[:4]}...)")
        out.append(_SECRET_VALUE.sub(REDACTED, word))
    return out, found


def command_words(text: str) -> list[str]:
    """``text`` split as a shell would (as tts-command splits its template), or at white space
    when it does not split (an unmatched quote)."""
    import shlex

    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def secret_value(value) -> str | None:
    """Why ``value`` looks like a credential or holds one (``redact_words``'s rule), or None."""
    found = redact_words(command_words(str(value)))[1]
    if not found:
        return None
    # "contains a credential (sk-a...)", "contains the value of --api-key"
    return "contains " + ", ".join(dict.fromkeys(found))


def refuse_secrets(options: dict, where: str = "--model_args/--metadata") -> None:
    """Raise ``SettingsError`` if any option name or value looks secret (the message never
    repeats the value)."""
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


# ----------------------------------------------------------------------------- set by the task
#: keys every task's YAML sets itself (its ``dataset_kwargs``) and how a user chooses them. lm-eval
#: calls the task loader as ``custom_dataset(**metadata, **dataset_kwargs)``, so the same key in
#: --metadata (or --model_args, which lm-eval merges into it) is Python's "got multiple values
#: for keyword argument" TypeError before any of adept-eval's code runs; nor could a run honour
#: it: the key is what makes ``vstyle_en_empathy`` English empathy
TASK_KEYS = {
    "task": "each ADEPT task sets its own: choose tasks with --tasks (adept, adept_emotion, ...)",
    "language": "each VStyle task sets its own: choose it with --tasks vstyle_en or vstyle_zh",
    "category": "each VStyle task sets its own: choose it with --tasks vstyle_en_<category>",
}


def refuse_task_keys(options: dict, where: str) -> None:
    """Raise ``SettingsError`` for a key the tasks set themselves (``TASK_KEYS``), naming it and
    how to choose what it would set."""
    bad = [f"{key!r} is not a {where} key ({TASK_KEYS[key]})" for key in (options or {})
           if key in TASK_KEYS]
    if bad:
        raise SettingsError("; ".join(bad))


# ----------------------------------------------------------------------------- who owns a key
@dataclass
class RunSources:
    """What the start-up hook saw when ``simple_evaluate`` started (None: not known)."""

    model: str | None = None
    model_keys: frozenset[str] | None = None


#: the current run's sources, set by ``note_run`` and cleared by ``forget_run``
SOURCES = RunSources()


def note_run(model, model_args) -> None:
    """Called by the start-up hook: which keys of the merged metadata came from --model_args."""
    SOURCES.model = model if isinstance(model, str) else type(model).__name__
    SOURCES.model_keys = frozenset(parse_model_args(model_args))


def forget_run() -> None:
    """The run is over: later task loads fall back to every key a model declares."""
    SOURCES.model_keys = None


def model_options() -> set[str]:
    """Every option one of adept-eval's own models declares (plus lm-eval's generic ones)."""
    from .models.base import LM_EVAL_GENERIC
    from .names import MODELS

    out = set(LM_EVAL_GENERIC)
    for name in MODELS.names():
        try:
            out |= MODELS.options(name)
        except Exception:  # a model whose optional dependency is absent declares nothing
            continue
    return out


def listener_keys() -> dict[str, set[str]]:
    """listener name -> the ``--metadata`` keys it declares (``corpus`` is the run's)."""
    from .listeners import LISTENERS

    return {name: LISTENERS.options(name) - {"corpus"} for name in LISTENERS.names()}


def judge_options() -> set[str]:
    """The ``judge_*`` keys (imports the judge: called only when a run has such a key)."""
    from .judge.runner import judge_option_names

    return set(judge_option_names())


@dataclass(frozen=True)
class Settings:
    """One suite's share of the merged options."""

    run: dict = field(default_factory=dict)
    listener: dict = field(default_factory=dict)
    judge: dict = field(default_factory=dict)
    model: dict = field(default_factory=dict)
    others: dict = field(default_factory=dict)  # owned by another suite's components


def split(metadata: dict, *, suite: str, listener: str | None = None) -> Settings:
    """Assign every key of lm-eval's merged metadata to its owner (see the module docstring)."""
    metadata = dict(metadata or {})
    refuse_secrets(metadata)
    listeners = listener_keys()
    if listener is not None and listener not in listeners:
        raise SettingsError(f"unknown listener {listener!r} (--metadata listener=...); "
                            f"available: {', '.join(sorted(listeners))}")
    # only a run that names a judge setting loads the judge (and aiohttp with it)
    judge = judge_options() if any(k.startswith(JUDGE_PREFIX) for k in metadata) else set()
    known_model = SOURCES.model_keys
    model = set(known_model) if known_model is not None else model_options()
    own_run = SUITES[suite].run_keys | LM_EVAL_KEYS
    other_run = set().union(*(s.run_keys for k, s in SUITES.items() if k != suite))
    out = Settings()
    problems = []
    for key, value in metadata.items():
        if key in model:
            out.model[key] = value
            # without the hook's record, a key both a model and the listener declare goes to both
            if known_model is not None or listener is None or key not in listeners[listener]:
                continue
        if key in own_run:
            out.run[key] = value
        elif listener is not None and key in listeners[listener]:
            out.listener[key] = value
        elif key.startswith(JUDGE_PREFIX) and key in judge:
            (out.judge if suite == "vstyle" else out.others)[key] = value
        elif key in other_run or (suite != "adept" and any(key in o for o in listeners.values())):
            out.others[key] = value
        elif key in model:
            continue
        else:
            owners = sorted(n for n, o in listeners.items() if key in o)
            if owners:
                problems.append(f"{key!r} is an option of listener {' / '.join(owners)}, but this "
                                f"run uses listener {listener!r} (--metadata listener={owners[0]})")
            elif key.startswith(JUDGE_PREFIX):
                problems.append(f"unknown judge setting {key!r}; known: {', '.join(sorted(judge))}")
            else:
                problems.append(f"unknown option {key!r}")
    if problems:
        valid = [f"run: {', '.join(sorted(SUITES[suite].run_keys))}"]
        if listener is not None:
            valid.append(f"listener {listener!r}: {', '.join(sorted(listeners[listener])) or '-'}")
        if suite == "vstyle":
            valid.append(f"judge: {', '.join(sorted(judge or judge_options()))}")
        if known_model is not None:
            valid.append(f"model {SOURCES.model!r}: its --model_args")
        raise SettingsError("; ".join(problems) + ". Valid --metadata keys for " + suite +
                            " tasks: " + "; ".join(valid))
    return out
