"""Spec 000 "Skill content is never compacted": the <skill_content name="…"> wrapper
identifies a skill; the summarizer sees [skill content retained verbatim: <name>]."""

from __future__ import annotations

from mas.runtime.context import latest_blocks, mask_skills, placeholder, skill_blocks, skill_row
from mas.runtime.context.skills import has_skill

BLOCK_A1 = '<skill_content name="alpha">use tabs v1</skill_content>'
BLOCK_A2 = '<skill_content name="alpha">use tabs v2</skill_content>'
BLOCK_B = "<skill_content name='beta' version=\"2\">\nline 1\nline 2\n</skill_content>"


def test_blocks_are_found_by_their_wrapper() -> None:
    message = {"role": "tool", "tool_call_id": "s", "content": f"Loaded.\n{BLOCK_A1}\n{BLOCK_B}"}
    assert skill_blocks(message) == [("alpha", BLOCK_A1), ("beta", BLOCK_B)]
    assert has_skill(message)
    assert not has_skill({"role": "user", "content": "<skill_content is mentioned>"})
    assert skill_blocks({"role": "user", "content": [{"type": "text", "text": BLOCK_A1}]}) == []


def test_the_summarizer_sees_the_placeholder_instead_of_the_body() -> None:
    message = {"role": "tool", "tool_call_id": "s", "content": f"ok {BLOCK_A1} done"}
    masked = mask_skills(message)
    assert masked["content"] == f"ok {placeholder('alpha')} done"
    assert placeholder("alpha") == "[skill content retained verbatim: alpha]"
    assert message["content"].startswith("ok <skill_content")  # the input is not modified
    plain = {"role": "user", "content": "hello"}
    assert mask_skills(plain) is plain


def test_each_skill_keeps_only_its_latest_block() -> None:
    messages = [
        {"role": "tool", "content": BLOCK_A1},
        {"role": "tool", "content": BLOCK_B},
        {"role": "tool", "content": BLOCK_A2},
    ]
    found = latest_blocks(messages)
    assert found == {"beta": BLOCK_B, "alpha": BLOCK_A2}
    assert list(found) == ["beta", "alpha"]
    assert skill_row(BLOCK_B) == {"role": "system", "content": BLOCK_B}
