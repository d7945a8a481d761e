"""Lab pipeline steps: the context they run in, and the stock steps.

A step is built by ``factory(params, spec)`` (``params``: its validated ``config:`` block,
``spec``: its :class:`~mas.runtime.spec.experiment.StepSpec`) and follows
:class:`~mas.runtime.protocols.Step`: ``outputs(ctx)`` names the files it writes (all
present = skipped unless ``--overwrite``), ``run(ctx)`` does the work and returns a
:class:`~mas.runtime.protocols.StepResult`, or raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from mas.library.lab.pipeline import StepRecord
from mas.library.lab.rundir import RunFolder, read_json
from mas.runtime.errors import MasError
from mas.runtime.runtime import Runtime
from mas.runtime.spec.experiment import StepSpec

SESSIONS_FILE = "sessions.json"
TRAJECTORIES_FILE = "trajectories.jsonl"
RESULTS_FILE = "results.json"
TABLE_FILE = "results.txt"
REPORT_FILE = "report.html"
RESULT_FILE = "result.txt"
"""The report's result sentences, one per line (what ``mas-ctl lab run`` prints last)."""


@dataclass
class StepContext:
    """What a step sees.

    :ivar runtime: plugins and registries.
    :ivar run: the lab run folder it reads and writes.
    :ivar spec: the step's own spec (name, type, depends_on, config).
    :ivar records: records of the steps that ran before it in this pass, by name.
    :ivar experiment: the loaded :class:`~mas.library.lab.experiment.LabExperiment`, or
        ``None`` when steps run over an existing run folder (``mas-ctl lab report``).
    :ivar session_function: runs one session (``run_sessions`` only).
    :ivar max_concurrency: sessions (and judge requests) in flight.
    :ivar overwrite: redo work whose outputs exist.
    :ivar stream: where progress goes (``None``: silent).
    :ivar runner: where sessions run (``experiment.runner`` with the command line's
        overrides; ``None``: threads here).
    """

    runtime: Runtime
    run: RunFolder
    spec: StepSpec
    records: dict[str, StepRecord] = field(default_factory=dict)
    experiment: Any = None
    session_function: Any = None
    max_concurrency: int = 2
    overwrite: bool = False
    stream: IO[str] | None = None
    runner: Any = None

    def path(self, relative: str) -> Path:
        """A path inside the run folder.

        :raises UnsafePathError: ``relative`` resolves outside it.
        """
        return self.run.inside(self.run.path / relative)

    def sessions(self) -> list[dict[str, Any]]:
        """The rows of ``sessions.json`` (written by ``run_sessions``).

        :raises MasError: the run folder has no session index yet.
        """
        data = read_json(self.path(SESSIONS_FILE))
        if not isinstance(data, dict) or not isinstance(data.get("sessions"), list):
            raise MasError(f"{self.path(SESSIONS_FILE)}: missing or unreadable; run the "
                           "sessions first")
        return list(data["sessions"])

    def need_experiment(self) -> Any:
        """The loaded experiment.

        :raises MasError: the step runs over a bare run folder.
        """
        if self.experiment is None:
            raise MasError(f"step {self.spec.step_name!r} needs the experiment file; run it "
                           "with mas-ctl lab run")
        return self.experiment
