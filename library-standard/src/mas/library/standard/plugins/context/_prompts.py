"""The summarizer's built-in prompts (spec 000's default, spec 004's checkpoint and update).

A user's ``instructions`` replace the first prompt; an update then wraps them with
:data:`MERGE_NOTE` unless ``update_instructions`` replaces the update prompt too.
"""

from __future__ import annotations

SUMMARIZE_INSTRUCTIONS = (
    "Summarize the conversation turns below concisely. Keep the key facts, the decisions "
    "taken, and every identifier (names, IDs, numbers) that a later turn may need to refer "
    "to. Write plain prose, not a transcript."
)
"""Spec 000's default system prompt for the summary call."""

UPDATE_INSTRUCTIONS = (
    "You maintain a running summary of a conversation. Merge the new conversation turns "
    "below into the existing summary: keep every fact, decision and identifier (names, "
    "IDs, numbers) that still matters, compress older details, and give the most recent "
    "actions more detail. Write plain prose, not a transcript. Reply with the full updated "
    "summary only."
)
"""Default update prompt: previous summary plus newly folded turns (spec 004's idea)."""

CHECKPOINT_SECTIONS: tuple[str, ...] = (
    "Goal",
    "Constraints & Preferences",
    "Progress",
    "Key Decisions",
    "Next Steps",
    "Critical Context",
)
"""Sections of the structured checkpoint (spec 004)."""

_SECTION_LIST = "\n".join(f"## {name}" for name in CHECKPOINT_SECTIONS)

CHECKPOINT_INSTRUCTIONS = (
    "Write a checkpoint of the conversation turns below so that work can continue from it "
    "alone. Use exactly these Markdown sections, in this order, writing 'None' under a "
    "section with nothing to say:\n"
    f"{_SECTION_LIST}\n"
    "Keep every identifier (names, IDs, numbers, file paths) a later turn may need. Be concise."
)
"""Structured checkpoint prompt with spec 004's sections."""

CHECKPOINT_UPDATE_INSTRUCTIONS = (
    "Update the existing checkpoint with the new conversation turns below. Keep exactly its "
    "Markdown sections, in this order:\n"
    f"{_SECTION_LIST}\n"
    "Merge new facts into the right section, compress older details, give the most recent "
    "actions more detail, and drop what is finished or obsolete only if nothing later needs "
    "it. Keep every identifier. Reply with the full updated checkpoint only."
)
"""Update prompt for the structured checkpoint."""

REPLAY_INSTRUCTION = (
    "Stop here and do not call any tool. {instructions} Summarize the conversation above "
    "this message."
)
"""Last user turn of a prefix-cache-friendly summary request."""

REPLAY_UPDATE_INSTRUCTION = (
    "Stop here and do not call any tool. {instructions} The existing summary is the "
    "conversation-summary message near the top; update it with everything after it."
)
"""Last user turn of a prefix-cache-friendly request when a summary already exists."""

PROMPTS: dict[str, tuple[str, str]] = {
    "prose": (SUMMARIZE_INSTRUCTIONS, UPDATE_INSTRUCTIONS),
    "checkpoint": (CHECKPOINT_INSTRUCTIONS, CHECKPOINT_UPDATE_INSTRUCTIONS),
}
"""Built-in (first summary, update) prompts by ``style``."""

MERGE_NOTE = (
    "You are given the existing summary and new conversation turns: merge the new turns "
    "into it and reply with the full updated summary only."
)
"""Wraps a user's own ``instructions`` for update calls, so they govern every summary."""

MUST_INCLUDE_NOTE = (
    " The summary must quote each of these identifiers exactly as written: {identifiers}."
)
"""Appended to the instruction of the identifier check's re-ask."""
