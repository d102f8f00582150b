"""The stages CI runs are the stages of ``xcompat run``: one table (the stage registry), the CI
stage table, the reusable workflow, the action and the GitLab template all name the same set."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from xcompat.pipeline.ci.table import CI_ONLY, CI_STAGES, LOCAL_ONLY, PART_OF, ci_stage_names
from xcompat.pipeline.registry import PIPELINE

ROOT = Path(__file__).resolve().parents[3]


def _workflow_stages(path: Path) -> dict[str, list[str]]:
    """Each job of a workflow -> the action stages its steps run, in order."""
    jobs = yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"]
    return {name: [step["with"]["stage"] for step in job.get("steps", [])
                   if str(step.get("uses", "")).startswith("./.xcompat-action")]
            for name, job in jobs.items()}


def test_the_ci_stage_table_is_the_run_registry_plus_the_gate():
    assert set(CI_STAGES) == set(ci_stage_names())
    expected = {PART_OF.get(name, name) for name in PIPELINE if name not in LOCAL_ONLY} | CI_ONLY
    assert LOCAL_ONLY <= set(PIPELINE)
    assert set(ci_stage_names()) == expected


def test_the_reusable_workflow_runs_every_stage_on_a_pull_request():
    jobs = _workflow_stages(ROOT / "workflows" / "xcompat.yml")
    ran = {stage for stages in jobs.values() for stage in stages}
    assert ran == set(ci_stage_names())
    # the cell's own stages run on its runner, in the order `xcompat run` runs them
    cell = jobs["test"]
    order = ci_stage_names()
    assert cell == sorted(cell, key=order.index)
    assert {"probe", "kernels", "test", "abi", "coverage"} <= set(cell)


def test_the_gitlab_template_runs_every_stage():
    text = (ROOT / "templates" / "xcompat.yml").read_text(encoding="utf-8")
    ran = set(re.findall(r"xcompat stage ([a-z][a-z-]*)", text))
    assert ran == set(ci_stage_names())


def test_the_action_takes_every_stage_and_knows_its_extras():
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    described = action["inputs"]["stage"]["description"]
    for name in ci_stage_names():
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", described), name
    for name in ci_stage_names():
        done = subprocess.run([sys.executable, "-m", "xcompat", "stage", name, "--print-extras"],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert re.fullmatch(r"[a-z,]*\n", done.stdout)
    unknown = subprocess.run([sys.executable, "-m", "xcompat", "stage", "lint", "--print-extras"],
                             capture_output=True, text=True, check=False)
    assert unknown.returncode == 2 and "plan" in unknown.stderr
