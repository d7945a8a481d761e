"""Render figures as the Markdown of benchmarks/RESULTS.md."""

from __future__ import annotations

from benchmarks.figures import Figure

INTRO = """\
Every figure below was measured in one run of the command above, on the machine above.
All strategies and peers run on the same seeded synthetic agent sessions
(benchmarks/synthetic.py: OpenAI chat format, parallel tool calls, 4 % of tool results
20-60k characters, facts planted in the first turns), with the same 8,000-token request
budget, the same counter (characters / 4 + 3 per message) and the same fake summarizer
model (benchmarks/counting.py: it answers at once and counts its calls and input tokens).
Times are ratios taken in the same run, never absolute promises.

The compaction-regime figures (issue 22) run a tool-heavy session of their own
(benchmarks/regime.py: every turn one to three tool rounds, results of 2,000-60,000
characters carrying reference codes) with each strategy's default params, default margins
included; `python -m benchmarks --only regime` reruns just them and replaces their
sections here.

A *turn* is one user turn; it makes one model call per tool round plus one. A turn counts
once as "over budget" or "lost user msg" however many of its calls were; pair breaks are
counted one per broken pairing per call.
"""


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def _verdict(met: bool | None) -> str:
    return {True: "**met**", False: "**not met**", None: "**not measured**"}[met]


def _target_row(fig: Figure) -> list[object]:
    return [fig.title, fig.target, _verdict(fig.met)]


def _section(fig: Figure) -> list[str]:
    out = [f"## {fig.title}", "", f"Target: {fig.target} — {_verdict(fig.met)}", ""]
    out += _table(fig.header, fig.rows)
    return out + [""] + [f"- {note}" for note in fig.notes] + ([""] if fig.notes else [])


def held(ok: bool | None) -> str:
    """How one target reads in a row or a note of a figure that checks several."""
    return {True: "held", False: "**not held**", None: "not measured"}[ok]


def render(figs: list[Figure], *, header: dict[str, str] | None = None,
           versions: dict[str, str] | None = None) -> str:
    """Markdown for ``figs``; with ``header`` and ``versions``, the whole results file."""
    out: list[str] = []
    if header is not None:
        out += ["# Benchmark results", ""]
        out += [f"- {key}: {value}" for key, value in header.items()]
        out += ["- packages: " + ", ".join(f"{k} {v}" for k, v in (versions or {}).items()), ""]
        out += [INTRO, "## Targets", ""]
        out += _table(["figure", "target", "result"], [_target_row(f) for f in figs])
        out.append("")
    for fig in figs:
        out += _section(fig)
    return "\n".join(out)


def splice(text: str, figs: list[Figure]) -> str:
    """The results file ``text`` with the section and the targets row of each of ``figs``
    replaced (a figure the file does not have yet is added at the end).

    What ``python -m benchmarks --only NAME`` writes: the other figures keep the numbers
    of the run that measured them.
    """
    lines = text.split("\n")
    for fig in figs:
        row = _table(["figure", "target", "result"], [_target_row(fig)])[-1]
        at = [i for i, line in enumerate(lines) if line.startswith(f"| {fig.title} |")]
        if at:
            lines[at[0]] = row
        else:
            table = lines.index("## Targets") + 2 if "## Targets" in lines else None
            if table is not None:
                end = table
                while end < len(lines) and lines[end].startswith("|"):
                    end += 1
                lines.insert(end, row)
        head = f"## {fig.title}"
        section = _section(fig)
        if head in lines:
            start = lines.index(head)
            stop = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
                        len(lines))
            lines[start:stop] = section
        else:
            lines += ([""] if lines and lines[-1] else []) + section
    return "\n".join(lines)
