"""A scripted session on the kernel's agent session loop (``mas.runtime.session``).

The session is saved after every turn (``session.json`` in the run folder), so a session
cut short by an interrupt resumes at its next turn on the following run. The item's
isolated probes are asked between turns from copies of the session
(:mod:`mas.library.lab.probes`); every probe gets its record in ``probes.jsonl``.
"""

from __future__ import annotations

from typing import Any

from mas.library.lab.dataset import Turn
from mas.library.lab.probes import ProbeLog, Snapshot, ask_isolated, probe_record
from mas.library.lab.sessions import SessionJob, scripted_result, tool_schema
from mas.runtime.session import STATE, Tool, open_session, record_events, write_transcript


class _Script:
    """The turn being played, and how often each scripted tool was called in it."""

    def __init__(self) -> None:
        self.turn = Turn(user="-")
        self.calls: dict[str, int] = {}

    def start(self, turn: Turn) -> None:
        """Play ``turn`` next: its scripted results, call counts from zero."""
        self.turn = turn
        self.calls = {}

    def tool(self, name: str) -> Tool:
        """The session tool ``name``, answering from the turn being played."""
        schema = tool_schema(name)["function"]

        def call(**_arguments: Any) -> str:
            number = self.calls.get(name, 0)
            self.calls[name] = number + 1
            return scripted_result(self.turn, name, number)

        return Tool(name, schema["description"], schema["parameters"], call)


def run_kernel_session(job: SessionJob) -> None:
    """Play ``job.item`` against the flavour's agent and write the run folder."""
    script = _Script()
    tools = [script.tool(name) for name in job.item.tool_names()]
    flavour = job.flavour
    session = open_session(job.runtime, flavour.agent, flavour.manifests,
                           session_id=job.session_id, state_path=job.folder / STATE, tools=tools,
                           cache=job.cache)
    close = record_events(job.runtime, job.folder, lambda: session.session_id,
                          committed_turns=session.turns)
    extra = {"flavour": flavour.name, "item_id": job.item.id, "run_index": job.run_index,
             "seed": job.seed}
    item = job.item
    log = ProbeLog(job.folder)
    try:
        for index in range(session.turns, len(item.turns) + 1):
            asked = [(n, p) for n, p in enumerate(item.probes)
                     if p.question is not None and p.turn == index and n not in log.done()]
            if asked:
                with Snapshot(session) as snapshot:
                    for number, probe in asked:
                        script.start(probe.asked())
                        log.add(ask_isolated(job, snapshot, number, probe, tools))
                # What degraded in the copies is saved with the probes' records, not with
                # the next turn: a kill before it would lose it (the probes are not asked
                # again).
                session.save()
            if index == len(item.turns):
                break
            turn = item.turn(index)
            script.start(turn)
            result = session.send(turn.user)
            for number, probe in enumerate(item.probes):
                if probe.question is None and probe.turn == index:
                    log.add(probe_record(number, probe, "inline", session, result.request,
                                         turn.user))
    except Exception as exc:
        write_transcript(job.folder, session, error=f"{type(exc).__name__}: {exc}", extra=extra)
        raise
    finally:
        close()
    write_transcript(job.folder, session, extra=extra)
