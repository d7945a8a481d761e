"""Agent Skills: ``activate_skill(name, unload=false)`` loading ``skills/<name>/SKILL.md``.

The tool result wraps the body in ``<skill_content name="…">`` so every history strategy
can recognise it and never paraphrase it. With ``pin_activated`` the body is also pinned
as a system part (``skills/activated/<name>``) until it is unloaded.
"""

from __future__ import annotations

import re
from pathlib import Path

from mas.runtime.context import ContextPart
from mas.runtime.paths import UnreadableFileError, read_regular
from mas.runtime.session.tools import Tool
from mas.runtime.spec.jsonl import BOM

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MAX_SKILL_BYTES = 1 << 20
"""Largest ``SKILL.md`` loaded (1 MiB: far past any model's window)."""


class SkillLibrary:
    """The skills under one folder and which of them are active in a session.

    :param root: the folder holding ``<name>/SKILL.md``.
    :param pin_activated: pin activated bodies as system parts.
    """

    def __init__(self, root: Path, *, pin_activated: bool = True) -> None:
        self.root = Path(root)
        self.pin_activated = pin_activated
        self.active: dict[str, str] = {}

    def available(self) -> list[str]:
        """Names of the skills on disk, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(p.parent.name for p in self.root.glob("*/SKILL.md"))

    def activate(self, name: str, unload: bool = False) -> str:
        """The ``activate_skill`` tool: load (or unload) a skill; returns the tool result."""
        if not _NAME.match(name) or name not in self.available():
            known = ", ".join(self.available()) or "none"
            raise ValueError(f"unknown skill {name!r}; available: {known}")
        if unload:
            self.active.pop(name, None)
            return f"skill {name} unloaded"
        try:  # a regular file of bounded size: a pipe would hang the turn
            raw = read_regular(self.root / name / "SKILL.md", MAX_SKILL_BYTES)
        except UnreadableFileError as exc:
            raise ValueError(f"skill {name!r}: {exc.reason}") from None
        body = raw.decode("utf-8").removeprefix(BOM).strip()
        self.active[name] = body
        return f'<skill_content name="{name}">\n{body}\n</skill_content>'

    def tool(self) -> Tool:
        """The ``activate_skill`` tool bound to this library."""
        return Tool(
            name="activate_skill",
            description="Load a skill's instructions by name "
            "(unload=true removes its pinned copy). "
            f"Available: {', '.join(self.available()) or 'none'}.",
            parameters={
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "unload": {"type": "boolean", "default": False},
                },
                "required": ["name"],
            },
            function=self.activate,
        )

    def parts(self) -> list[ContextPart]:
        """Pinned system parts of the active skills (none unless ``pin_activated``)."""
        if not self.pin_activated:
            return []
        return [ContextPart.activated_skill(name, body) for name, body in self.active.items()]
