"""Issue 23, "Retrieval that fits conversations": the archive's line search stems, brings
each line back with its session header and neighbours, takes several questions, and stays
within its budget."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mas.runtime.context.archive import Archive, message_lines
from mas.runtime.context.archive_query import questions, terms, variants
from mas.runtime.context.recalled import CONTEXT_SHARE

SESSION = [
    "Session 3 - 8 May 2023, 1:56 pm",
    "Caroline: I went to a support group yesterday.",
    "Melanie: How did it go?",
    "Caroline: I was so excited about the adoption news.",
    "Melanie: That is wonderful.",
    "Caroline: We planned many outdoor activities for the kids.",
    "Melanie: Sounds fun.",
]


def session_archive() -> Archive:
    archive = Archive()
    archive.add(0, [{"role": "user", "content": "\n".join(SESSION)},
                    {"role": "assistant", "content": "Noted."},
                    {"role": "user", "content": "My order is ORD-7781, 142.50 EUR."}])
    return archive


def test_stems_meet_the_words_they_were_cut_from() -> None:
    archive = session_archive()
    for query, line in (("excit", 3), ("activitie", 5), ("excitement", 3), ("planning", 5)):
        found = archive.search(query, max_tokens=200)
        assert found.blocks and line in found.blocks[0].lines, query


def test_a_line_comes_back_with_its_header_and_neighbours() -> None:
    found = session_archive().search("adoption", max_tokens=200)
    block = found.blocks[0]
    assert sorted(block.lines) == [0, 2, 3, 4], "header, line before, hit, line after"
    text = found.text()
    assert text.index("Session 3") < text.index("adoption") and "..." in text
    assert found.tokens <= 200 and found.hits == 1


def test_neighbours_cross_message_boundaries() -> None:
    found = session_archive().search("ORD-7781", max_tokens=200)
    assert found.positions[:2] == [2, 1], "the code's message first, the one before after it"
    assert "142.50 EUR" in found.text()


def test_several_questions_each_get_their_best_line() -> None:
    archive = session_archive()
    found = archive.search("support group; ORD-7781", max_tokens=200)
    assert found.questions == 2 and {0, 2} <= set(found.positions)
    assert found.positions[0] == 0, "the first question's best line leads"


def test_a_tight_budget_keeps_the_bare_best_line() -> None:
    found = session_archive().search("adoption", max_tokens=45)
    assert found.tokens <= 45
    assert [line for b in found.blocks for line in b.lines.values()] == [SESSION[3]]


def test_query_syntax_is_text() -> None:
    archive = session_archive()
    for query in ('"; drop table messages; --', "NEAR(a b)", "a* OR b", "-", "", ";;;"):
        archive.search(query, max_tokens=100)
    assert archive.stats()["messages"] == 3


def test_query_parsing() -> None:
    assert questions("excit;  \n activitie; ;") == ["excit", "activitie"]
    assert terms("Was ORD-7781 paid, 142.50 EUR (50%)?") == ["ord-7781", "paid", "142.50",
                                                             "eur", "50%"]
    assert variants("excit")[:3] == ["excit", "excits", "excites"]
    assert variants("ord-7781") == ["ord-7781"] and variants("go") == ["go"]


def test_eviction_removes_lines_and_counts() -> None:
    archive = Archive(max_messages=2)
    archive.add(0, [{"role": "user", "content": f"fact number {i}\nzebra {i}"} for i in range(4)])
    assert archive.stats()["evicted"] == 2
    assert sorted(archive.search("zebra", max_tokens=500).positions) == [2, 3]
    assert archive.add(0, [{"role": "user", "content": "zebra again"}]) == 0, (
        "older than the eviction: storing it would only evict it again")
    assert archive.add(3, [{"role": "user", "content": "x"}] * 2) == 1


def test_an_archive_from_before_line_indexing_is_reindexed(tmp_path: Path) -> None:
    path = tmp_path / "archive.sqlite"
    db = sqlite3.connect(path)
    db.executescript("""
        create table messages (position integer primary key, role text not null,
                               body text not null, bytes integer not null);
        create virtual table message_text using fts5(text, tokenize='unicode61');
        create table meta (key text primary key, value integer not null);""")
    body = json.dumps({"role": "user", "content": "We were excited about Lisbon."})
    db.execute("insert into messages values (4, 'user', ?, ?)", (body, len(body)))
    db.commit()
    db.close()
    found = Archive(path).search("excit", max_tokens=100)
    assert found.positions == [4]


_line = st.text(st.sampled_from("abcdefgh ORD-12.\n"), max_size=300)


@settings(max_examples=60, deadline=None)
@given(st.lists(_line, min_size=1, max_size=12), st.integers(16, 400),
       st.text(st.sampled_from("abcdefgh ORD-12;"), max_size=40))
def test_a_recall_never_exceeds_its_budget(texts: list[str], budget: int, query: str) -> None:
    archive = Archive()
    archive.add(0, [{"role": "user", "content": t} for t in texts])
    found = archive.search(query, max_tokens=budget)
    assert found.tokens <= budget
    assert archive.estimator.text(found.text()) == found.tokens
    for block in found.blocks:
        lines = message_lines({"content": texts[block.position]})
        assert all(0 <= n < len(lines) for n in block.lines)


def test_a_hit_that_fits_comes_back_whole_and_only_its_context_is_capped() -> None:
    # An evidence line cut in the middle is no longer the evidence: at a small budget
    # the hit (longer than a third of it) stays whole; its neighbours are capped.
    long_line = "Caroline: " + "we adopted two kittens from the shelter on Maple Street " * 6
    archive = Archive()
    archive.add(0, [{"role": "user", "content": "\n".join(
        ["Session 1 - 8 May 2023", "Melanie: " + "so " * 200, long_line.strip(),
         "Melanie: " + "wow " * 200])}])
    found = archive.search("kittens shelter", max_tokens=200)
    lines = found.blocks[0].lines
    assert lines[2] == long_line.strip(), "the hit whole"
    assert found.tokens <= 200 and all(len(lines[n]) < 400 for n in lines if n != 2)


def test_context_takes_at_most_its_share_so_more_hits_fit() -> None:
    # Twelve sessions, each with one line about the kiln among long small talk: whole
    # context for each hit would fill the budget after two or three of them.
    archive = Archive()
    for session in range(12):
        chatter = f"Melanie: that sounds lovely, day {session}, " + "and I am glad " * 12
        archive.add(session, [{"role": "user", "content": "\n".join(
            [f"Session {session + 1} - {session + 1} May 2023", chatter,
             f"Caroline: the kiln fired pot number {session} today", chatter + "too"])}])
    budget = 400
    found = archive.search("kiln", max_tokens=budget)
    estimator = archive.estimator
    hits = [text for b in found.blocks for text in b.lines.values() if "kiln" in text]
    context = sum(estimator.text(text) + 2 for b in found.blocks
                  for text in b.lines.values() if "kiln" not in text)
    assert context <= budget * CONTEXT_SHARE, "the lines around hits keep to their share"
    assert len(hits) == found.hits and found.hits >= 6, "the rest of the budget holds hits"
    assert found.tokens <= budget


def pottery_archive() -> Archive:
    """Two sessions archived a message each, the first followed by the model's reply."""
    archive = Archive()
    archive.add(0, [{"role": "user", "content": "\n".join([
        "Session 3 - 8 May 2023",
        "Melanie: How was your week?",
        "Caroline: Busy! I started pottery classes last Tuesday and I love them.",
        "Melanie: That's great, what did you make?",
        "Caroline: A lopsided bowl, but I'm proud of it."])},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "\n".join([
            "Session 4 - 20 May 2023", "Melanie: Any news?",
            "Caroline: My pottery teacher says I have a steady hand.", "Melanie: Told you!"])}])
    return archive


def test_function_words_are_not_searched_while_a_question_has_others() -> None:
    # In a small archive "what" and "did" are rare, so they ranked the other speaker's
    # question first ("what did you make?") above the line that answers.
    archive = pottery_archive()
    found = archive.search("What classes did Caroline start?", max_tokens=60).text()
    assert "I started pottery classes" in found and "what did you make" not in found
    assert terms("When did Will go in May?") == ["will", "go", "may"], "names and months stay"
    assert terms("What did she do?") == ["what", "did", "she", "do"], "nothing else to search"
    assert archive.search("what did you", max_tokens=60).text(), "still searched when alone"


def test_the_recall_example_in_the_docs_is_what_the_search_returns() -> None:
    archive = pottery_archive()
    docs = (Path(__file__).resolve().parents[2] / "docs" / "context.md").read_text()
    shown = docs.split("give the model (96 tokens, three hits):\n\n```text\n", 1)[1]
    found = archive.search("What classes did Caroline start?", max_tokens=120)
    assert shown.split("\n```", 1)[0] == found.text()
    assert (found.tokens, found.hits) == (96, 3)
    bare = archive.search("What classes did Caroline start?", max_tokens=60).text()
    assert "Session 3" not in bare and "I started pottery classes" in bare
