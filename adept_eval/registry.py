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
        """Add an entry: ``register(name, "module:attr", **options)``, or, as a decorator,
        ``@register(name)`` for the decorated object.

        An entry registered again replaces the earlier one: a built-in part's module, once
        loaded, registers its object over its lazy ``"module:attr"`` entry.

        Args:
            name: The entry's name.
            target: A ``"module:attr"`` string or the object; None to decorate.
            **options: Options the entry fixes for ``create``.

        Returns:
            The target when given, else the decorator (which returns the object it
            registers).
        """
        def add(obj):
            self._targets[name] = obj
            self._fixed[name] = dict(options)
            return obj

        return add(target) if target is not None else add

    def unregister(self, name: str) -> None:
        """Remove the entry ``name``, if there is one.

        Args:
            name: The entry's name.
        """
        self._targets.pop(name, None)
        self._fixed.pop(name, None)

    # ------------------------------------------------------------------ reading
    def names(self) -> list[str]:
        """List the registered names (imports nothing).

        Returns:
            Every registered name, sorted.
        """
        return sorted(self._targets)

    def __contains__(self, name) -> bool:
        return name in self._targets

    def __iter__(self):
        return iter(self.names())

    def target(self, name: str):
        """Look an entry up as registered (imports nothing).

        Args:
            name: The entry's name.

        Returns:
            A ``"module:attr"`` string or the object.

        Raises:
            ValueError: (or the registry's own ``error`` type) ``name`` is no entry.
        """
        self._known(name)
        return self._targets[name]

    def get(self, name: str):
        """Load an entry's object, importing its module on first use.

        Args:
            name: The entry's name.

        Returns:
            The object (the same one on every call).

        Raises:
            ValueError: (or the registry's own ``error`` type) ``name`` is no entry.
        """
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
        """Call the entry's target with its fixed options, the caller's taking precedence.

        Args:
            name: The entry's name.
            **options: The caller's options.

        Returns:
            What the target returns (a listener, a backend, a model).

        Raises:
            ValueError: (or the registry's own ``error`` type) ``name`` is no entry.
        """
        return self.get(name)(**{**self._fixed.get(name, {}), **options})

    def options(self, name: str) -> set[str]:
        """The options a user may give the entry.

        Args:
            name: The entry.

        Returns:
            The keyword options its target declares (``__init__`` parameters through its
            class hierarchy, or a factory's parameters), less private ``_x`` ones and the
            entry's fixed options, which are not the user's.

        Raises:
            ValueError: (or the registry's own ``error`` type) ``name`` is no entry.
        """
        import inspect

        target = self.get(name)
        callables = [k.__dict__["__init__"] for k in inspect.getmro(target)
                     if "__init__" in k.__dict__] if inspect.isclass(target) else [target]
        found: set[str] = set()
        for fn in callables:
            found |= _keyword_parameters(fn)
        return {n for n in found if not n.startswith("_")} - set(self._fixed.get(name, {}))

    def _known(self, name: str) -> None:
        if name not in self._targets:
            raise self.error(f"unknown {self.kind} {name!r}; available: {', '.join(self.names())}")


def _keyword_parameters(fn) -> set[str]:
    """The names of ``fn``'s parameters that a keyword can set (not ``self``, ``*args`` or
    ``**kwargs``); none when its signature cannot be read."""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params if p.name != "self"
            and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
