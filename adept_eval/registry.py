"""The one registry shape of adept-eval's interchangeable parts: listeners, LLM backends, models.

An entry is a name and a target: a lazy ``"module:attr"`` string (lm-eval's own placeholder
form, so naming every built-in part costs no import) or the object itself (what the
``register`` decorator gives, for parts defined elsewhere, e.g. in a test). ``get`` loads a
lazy target on first use; ``create`` calls it with the entry's fixed options under the
caller's; ``options`` reads the keyword options a target declares (its constructor's
parameters through the class hierarchy), which is how ``settings`` knows who owns a
``--model_args``/``--metadata`` key without a second list to keep in step.

Standard library only, and nothing imported at module level: ``names`` (imported by the
start-up hook at every interpreter start-up) builds the models' registry from it.
"""

from __future__ import annotations

__all__ = ["Registry"]


class Registry:
    """name -> target (``"module:attr"`` or an object) with the options the entry fixes."""

    def __init__(self, kind: str, entries: dict | None = None, *, error=ValueError):
        self.kind = kind  # what the error messages call an entry ("listener", "LLM backend")
        self.error = error  # raised for an unknown name: the caller's user-facing error type
        self._targets: dict = {}
        self._fixed: dict[str, dict] = {}
        for name, target in (entries or {}).items():
            self.register(name, target)

    # ------------------------------------------------------------------ registration
    def register(self, name: str, target=None, **options):
        """``register(name, "module:attr", **options)`` adds an entry; ``@register(name)``
        registers the decorated object (replacing a lazy entry of the same name, which is what
        happens when a built-in part's module is loaded and registers itself)."""
        def add(obj):
            self._targets[name] = obj
            self._fixed[name] = dict(options)
            return obj

        return add(target) if target is not None else add

    def unregister(self, name: str) -> None:
        self._targets.pop(name, None)
        self._fixed.pop(name, None)

    # ------------------------------------------------------------------ reading
    def names(self) -> list[str]:
        """Every registered name, sorted (imports nothing)."""
        return sorted(self._targets)

    def __contains__(self, name) -> bool:
        return name in self._targets

    def __iter__(self):
        return iter(self.names())

    def target(self, name: str):
        """The entry as registered: a ``"module:attr"`` string or the object (imports nothing)."""
        self._known(name)
        return self._targets[name]

    def get(self, name: str):
        """The entry's object, importing its module on first use."""
        self._known(name)
        target = self._targets[name]
        if isinstance(target, str):
            import importlib

            module, _, attr = target.partition(":")
            loaded = getattr(importlib.import_module(module), attr)
            # the module may have registered the object itself meanwhile: keep one object
            if isinstance(self._targets.get(name), str):
                self._targets[name] = loaded
            target = loaded
        return target

    def create(self, name: str, **options):
        """Call the entry's target with its fixed options, the caller's taking precedence."""
        return self.get(name)(**{**self._fixed.get(name, {}), **options})

    def options(self, name: str) -> set[str]:
        """The keyword options the entry's target declares (``__init__`` parameters through its
        class hierarchy, or a factory's parameters); private ``_x`` ones and the entry's fixed
        options are not the user's."""
        import inspect

        target = self.get(name)
        found: set[str] = set()
        callables = [k.__dict__["__init__"] for k in inspect.getmro(target)
                     if "__init__" in k.__dict__] if inspect.isclass(target) else [target]
        for fn in callables:
            try:
                params = inspect.signature(fn).parameters.values()
            except (TypeError, ValueError):
                continue
            found |= {p.name for p in params if p.name != "self"
                      and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        return {n for n in found if not n.startswith("_")} - set(self._fixed.get(name, {}))

    def _known(self, name: str) -> None:
        if name not in self._targets:
            raise self.error(f"unknown {self.kind} {name!r}; available: {', '.join(self.names())}")
