"""Issue 23: a summary over its room is clipped by whole lines of prose, ranked, so the
identifiers the prose held stay when the identifier check's section is appended."""

from __future__ import annotations

from mas.library.standard.plugins.context._base import summary_row
from mas.library.standard.plugins.context.identifier_check import SECTION_HEAD, SummaryFit
from mas.library.standard.plugins.context.identifiers import missing_from
from mas.runtime.context import DEFAULT_ESTIMATOR

HELD = [f"- The customer confirmed order ORD-{n:04d} on the phone." for n in range(8)]
"""Lines of prose that each hold an identifier nothing else holds."""

FILLER = [f"- They chatted about the weather and the long weekend, at some length ({w})."
          for w in "abcdefgh"]
"""Lines of prose that hold no identifier the summary was checked for."""

CARRIED = "- The parcel left this morning with tracking TRK-5555."
"""A line of prose whose only identifier the section also lists."""

SECTION = (SECTION_HEAD + "- TRK-5555: The parcel left with tracking TRK-5555.\n"
           "- RC-7186: the refund case RC-7186 is open.")
"""The check's section: one identifier the prose holds too, one it left out."""

WANTED = {**{f"ORD-{n:04d}": 0 for n in range(8)}, "TRK-5555": 0, "RC-7186": 3}
"""The identifiers checked, with their ranks (0 said by people ... 3 tool output)."""


def _fits(fit: SummaryFit, text: str) -> bool:
    return DEFAULT_ESTIMATOR.message(summary_row(text)) <= fit.room


def test_an_appended_section_costs_the_prose_lines_that_hold_nothing_not_its_identifiers() -> None:
    prose = [CARRIED, *(line for pair in zip(FILLER, HELD, strict=True) for line in pair)]
    text = "\n".join(prose) + SECTION
    # Room for the lines holding identifiers and the section (with a token per line for
    # rounding), not for the rest: the section forces a clip.
    fit = SummaryFit(room=DEFAULT_ESTIMATOR.message(summary_row("\n".join(HELD) + SECTION))
                     + len(HELD), limit=100_000)
    assert not _fits(fit, text)
    clipped = fit.clip(text, identifiers=WANTED)
    assert _fits(fit, clipped)
    assert missing_from(clipped, list(WANTED)) == [], "every identifier the prose held stays"
    kept, head, section = clipped.partition(SECTION_HEAD)
    assert head + section == SECTION, "the section is kept whole"
    lines = kept.split("\n")
    assert set(lines) <= set(prose), "whole lines only: none cut in the middle"
    assert [line for line in lines if line in HELD] == HELD, "in their order"
    assert CARRIED not in lines, "what the section lists goes first"


def test_a_line_shared_with_another_goes_before_the_last_holder_of_an_identifier() -> None:
    # Both lines hold ORD-0001; dropping either keeps it, dropping both would not.
    shared = ["- First note on ORD-0001 and nothing else of use here.",
              "- Second note on ORD-0001, again with nothing else of use."]
    text = "\n".join([*shared, *FILLER])
    fit = SummaryFit(room=DEFAULT_ESTIMATOR.message(summary_row(shared[1])) + 2, limit=100_000)
    clipped = fit.clip(text, identifiers={"ORD-0001": 0})
    assert _fits(fit, clipped) and clipped in shared


def test_only_a_line_alone_over_the_room_is_cut_in_the_middle() -> None:
    line = "- ORD-0001 " + "word " * 400 + "ORD-0002"
    fit = SummaryFit(room=60, limit=100_000)
    clipped = fit.clip(line, identifiers={"ORD-0001": 0, "ORD-0002": 0})
    assert _fits(fit, clipped) and "characters omitted" in clipped
    assert clipped.startswith("- ORD-0001") and clipped.endswith("ORD-0002")
    # Beside lines that fit, the line over the room is the one that goes.
    clipped = fit.clip("\n".join([line, HELD[0]]),
                       identifiers={"ORD-0001": 0, "ORD-0002": 0, "ORD-0000": 3})
    assert clipped == HELD[0]


def test_lines_go_by_the_rank_of_their_best_identifier_then_by_how_many_per_token() -> None:
    # What people said (rank 0) outlives what the assistant said (1), which outlives tool
    # output (3), however many identifiers a line holds; among equals the line holding
    # fewer per token goes first, then the oldest.
    fact = "- Contract CTR-52394 with supplier Sofia Aydin has a cap of 8,715 EUR."
    logs = [f"- 2026-03-1{n}T0{n}:15 svc-{n} req 10000{n} status 200 latency 1{n} ms"
            for n in range(6)]
    ranks = {"CTR-52394": 0, "Sofia Aydin": 0, "8,715 EUR": 0}
    for n in range(6):
        ranks |= {i: 1 if n in (1, 4) else 3 for i in (f"2026-03-1{n}", f"0{n}:15", f"10000{n}")}
    ranks["11 ms"] = 3  # logs[1] holds one identifier more than logs[4]
    room = DEFAULT_ESTIMATOR.message(summary_row("\n".join([fact, *logs[:2]]))) + 6
    fit = SummaryFit(room=room, limit=100_000)
    clipped = fit.clip("\n".join([fact, *logs]), identifiers=ranks)
    assert _fits(fit, clipped)
    assert clipped.split("\n") == [fact, logs[1], logs[4]]
    fit = SummaryFit(room=DEFAULT_ESTIMATOR.message(summary_row("\n".join([fact, logs[1]]))) + 4,
                     limit=100_000)
    assert fit.clip("\n".join([fact, *logs]), identifiers=ranks).split("\n") == [fact, logs[1]]
