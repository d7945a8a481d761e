"""Exceptions the kernel raises, each carrying enough to print one clear line."""

from __future__ import annotations

import reprlib
from dataclasses import dataclass


class MasError(Exception):
    """Base class of every error mas raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with user input: where it is, what is wrong, and the value found.

    ``location`` is a dotted YAML path such as ``spec.context_manager.params.keep_turns``;
    ``source`` is the file (or ``<string>``) it came from.
    """

    source: str
    location: str
    message: str
    value: object = None
    has_value: bool = False

    def as_dict(self) -> dict[str, object]:
        """The problem as JSON data (``--json`` output); ``value`` only when one was found."""
        data: dict[str, object] = {
            "source": self.source,
            "location": self.location,
            "message": self.message,
        }
        if self.has_value:
            data["value"] = self.value
        data["line"] = self.format()
        return data

    def format(self) -> str:
        """Render as ``file: path: message (got value)``, the one-line form the CLI prints."""
        where = f"{self.source}: {self.location}: " if self.location else f"{self.source}: "
        got = f" (got {_short_repr(self.value)})" if self.has_value else ""
        return " ".join(f"{where}{self.message}{got}".splitlines())


def _short_repr(value: object, limit: int = 80) -> str:
    # reprlib stops after a few items per level and a few levels, so the cost is bounded
    # whatever the value (a full repr of an expanded YAML alias bomb never finishes).
    text = _BOUNDED.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_BOUNDED = reprlib.Repr()
_BOUNDED.maxlevel = 3
_BOUNDED.maxstring = _BOUNDED.maxother = _BOUNDED.maxlong = 80


class ManifestError(MasError):
    """A manifest, overlay, experiment or params block failed validation.

    Holds every problem found, so the user fixes them all in one pass.
    """

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(p.format() for p in self.problems))


class PluginLoadError(MasError):
    """A plugin could not be imported, registered, run its registration hooks or a hook call.

    The message names the entry point, its group, the distribution and version that
    declared it, what was being done (``stage``) and, when known, the file and line where
    it went wrong; the original exception is the ``__cause__``.
    """

    _DOING = {
        "import": "importing",
        "register": "registering",
        "hook": "running a registration hook of",
        "command": "adding a command of",
        "call": "calling into",
        "bind": "building a type of",
    }

    def __init__(
        self,
        entry_point: str,
        group: str,
        distribution: str | None,
        version: str | None,
        reason: BaseException,
        *,
        stage: str = "import",
        file: str | None = None,
        line: int | None = None,
    ) -> None:
        self.entry_point = entry_point
        self.group = group
        self.distribution = distribution
        self.version = version
        self.reason = reason
        self.stage = stage
        self.file = file
        self.line = line
        # A one-file plugin has its file where a distribution would be, and no version.
        dist = " ".join(filter(None, (distribution, version))) or "unknown distribution"
        where = ""
        if file:
            where = f" at {file}:{line}" if line else f" at {file}"
        super().__init__(
            f'Error {self._DOING.get(stage, stage)} plugin "{entry_point}" '
            f"(entry point group {group!r}, distribution {dist}){where}: "
            f"{type(reason).__name__}: {reason}"
        )

    @property
    def hint(self) -> str:
        """How to run without this plugin."""
        return f"MAS_DISABLE_PLUGINS={self.entry_point} skips it"


class UnknownTypeError(MasError, LookupError):
    """A ``type:`` string names nothing registered for that kind.

    The message lists what is available and the closest match.
    """

    def __init__(self, kind: str, name: str, available: list[str], hint: str = "") -> None:
        self.kind = kind
        self.name = name
        self.available = available
        listing = ", ".join(available) if available else "none registered"
        super().__init__(f"unknown {kind} type {name!r}{hint}; available: {listing}")


class DuplicateTypeError(MasError):
    """Two plugins registered the same type string for one kind."""

    def __init__(self, kind: str, name: str, first: str, second: str) -> None:
        self.kind = kind
        self.name = name
        super().__init__(f"{kind} type {name!r} registered twice: by {first} and by {second}")


class TypeClashError(UnknownTypeError):
    """Two or more plugins registered the same type string for one kind.

    Neither is bound by the bare name; ``plugin:name`` (the entry-point name of the
    plugin, then the type) chooses one. It is an :class:`UnknownTypeError`, so whatever
    reports an unknown type reports a clash the same way.
    """

    def __init__(self, kind: str, name: str, providers: list[tuple[str, str]]) -> None:
        self.kind = kind
        self.name = name
        self.available = []
        who = " and ".join(description for _, description in providers)
        choices = " or ".join(f"'{plugin}:{name}'" for plugin, _ in providers)
        MasError.__init__(
            self,
            f"{kind} type {name!r} is registered by both {who}; neither is bound by that "
            f"name: write {choices} to choose",
        )


class BudgetExceededError(MasError):
    """A run hit ``spec.budget.max_llm_calls``."""


class ModelCallError(MasError):
    """A model call failed after LiteLLM's own retries; the message says why, once."""


class StorageError(MasError, OSError):
    """A file could not be written or read (disk full, permissions, a full database).

    The message names the file and what to do; the ``OSError`` is the ``__cause__``. It is
    an ``OSError`` too, so code that handles those keeps handling it.
    """

    @classmethod
    def writing(cls, path: object, exc: BaseException) -> StorageError:
        """The error for a failed write of ``path``: what went wrong and what to do."""
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        return cls(f"{path}: cannot write ({reason}); free disk space or fix the folder's "
                   "permissions, then run the same command again to resume")


class PluginTimeoutError(MasError, TimeoutError):
    """A plugin's import or registration hook was still running when its deadline passed.

    :param what: what was running (``"import of entry point 'x'"``).
    :param seconds: the deadline.
    :param stack: where its thread was waiting, outermost frame first, as
        ``(file, line, module)``: the plugin's own line is in there.
    """

    def __init__(self, what: str, seconds: float, stack: list[tuple[str, int, object]]) -> None:
        super().__init__(
            f"{what} did not finish within {seconds:g} s; left running on its thread "
            "(a thread cannot be stopped)"
        )
        self.what = what
        self.seconds = seconds
        self.stack = stack
