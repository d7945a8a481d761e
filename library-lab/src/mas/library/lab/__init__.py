"""mas-library-lab: experiments, pipeline steps, the session runner and reports.

::

    from mas.runtime import Runtime
    from mas.library.lab import run_experiment, report_run

    outcome = run_experiment(Runtime.create(), Path("experiment.yaml"), max_concurrency=2)
    outcome.run.path / "report.html"      # runs/<experiment>/<timestamp>/report.html
    report_run(Runtime.create(), outcome.run.path)   # redo trajectories, results, report

From the shell: ``mas-ctl lab run EXPERIMENT.yaml``, ``mas-ctl lab report RUN_DIR``,
``mas-ctl lab ls``. The guide is docs/lab.md.
"""

from __future__ import annotations

from mas.library.lab import _needs_kernel  # noqa: F401  (first: names a missing kernel)
from mas.library.lab.dataset import Dataset, Item, Turn, load_dataset
from mas.library.lab.experiment import Flavour, LabExperiment, load_lab_experiment
from mas.library.lab.lab import LabOutcome, report_run, run_experiment
from mas.library.lab.sessions import SessionFunction, SessionJob, scripted_result
from mas.library.lab.steps import StepContext

__all__ = [
    "Dataset",
    "Flavour",
    "Item",
    "LabExperiment",
    "LabOutcome",
    "SessionFunction",
    "SessionJob",
    "StepContext",
    "Turn",
    "load_dataset",
    "load_lab_experiment",
    "report_run",
    "run_experiment",
    "scripted_result",
]
