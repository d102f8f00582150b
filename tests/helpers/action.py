"""Shared by the release-gate and action tests: real git repositories with tags, crafted results
following the common result envelope, and (below) a runner for composite actions."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Release Bot",
    "GIT_AUTHOR_EMAIL": "release@example.com",
    "GIT_COMMITTER_NAME": "Release Bot",
    "GIT_COMMITTER_EMAIL": "release@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_SYSTEM": os.devnull,
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "-q", "-b", "main")
        self._n = 0

    def commit(self, message: str = "change") -> str:
        self._n += 1
        (self.path / "file.txt").write_text(f"{self._n}\n")
        git(self.path, "add", "file.txt")
        git(self.path, "commit", "-q", "-m", message)
        return git(self.path, "rev-parse", "HEAD").strip()

    def tag(self, name: str, *, annotated: bool = True) -> None:
        if annotated:
            git(self.path, "tag", "-a", name, "-m", name)
        else:
            git(self.path, "tag", name)


def envelope(kind: str, cell_id: str | None, status: str, summary: str = "", **extra: Any) -> dict[str, Any]:
    return {"version": 1, "kind": kind, "cell_id": cell_id, "status": status,
            "summary": summary or f"{kind} {status}", **extra}


def write(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2))
    return path


def plan_document(*cells: tuple[str, bool]) -> dict[str, Any]:
    return {
        "version": 1,
        "cells": [
            {"id": cid, "required": required, "python": "3.12", "platform": "linux", "arch": "x86_64",
             "backend": "cpu", "runs_on": ["ubuntu-latest"]}
            for cid, required in cells
        ],
    }


def run_gate(cwd: Path, *args: str, env: dict[str, str] | None = None,
             in_process: bool = False) -> tuple[int, str, dict[str, Any] | None]:
    """Run ``xcompat gate`` in a subprocess (or, ``in_process``, through ``cli.main`` here);
    return exit code, output and gate.json (schema-checked)."""
    import sys

    from xcompat.jsonio import validate

    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("GITHUB_", "CI_", "GITLAB")) and k != "CI"}
    if in_process:
        from tests.helpers.cli import xcompat_in_process

        proc = xcompat_in_process("gate", *args, cwd=cwd, env={**clean, **(env or {})})
    else:
        proc = subprocess.run(
            [sys.executable, "-m", "xcompat", "gate", *args], cwd=cwd, capture_output=True, text=True,
            env={**clean, **(env or {})}, timeout=120, check=False,
        )
    out = cwd / "gate.json"
    document = json.loads(out.read_text()) if out.exists() else None
    if document is not None:
        validate("gate", document)  # every gate.json the CLI writes matches its schema
    return proc.returncode, proc.stdout + proc.stderr, document


def gate_in_process(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, dict[str, Any] | None]:
    """:func:`run_gate` through ``cli.main`` in this process."""
    return run_gate(cwd, *args, env=env, in_process=True)


def checks_by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in document["checks"]}


# -- a runner for composite actions ------------------------------------------------------
#
# GitHub's runner is not available outside GitHub, so the composite action is executed the
# way the runner documents it: inputs with defaults, `${{ }}` expressions evaluated by
# GitHub's own expression library (@actions/expressions, from npm), each `run:` step written
# to a file and run with `bash --noprofile --norc -eo pipefail {0}`, GITHUB_OUTPUT /
# GITHUB_ENV / GITHUB_PATH / GITHUB_STEP_SUMMARY as per-step files, step `if:` conditions
# with the implicit `success() &&`, and `steps.<id>.outputs/outcome/conclusion`.

import re
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field

REPO_ROOT = Path(__file__).resolve().parents[2]
EXPRESSIONS_PACKAGE = REPO_ROOT / "node_modules" / "@actions" / "expressions"

_EVALUATOR_JS = r"""
import { Lexer, Parser, Evaluator, data } from "@actions/expressions";
import { truthy } from "@actions/expressions/result";

import readline from "node:readline";

// One JSON request per input line, one JSON answer per output line.
let contexts, names, statusFunctions, functionMap;
function setup(input) {
  contexts = JSON.parse(JSON.stringify(input.contexts), data.reviver);
  names = Object.keys(input.contexts);
  const status = input.status;  // "success" | "failure" | "cancelled"
  const fn = (name, value) => ({ name, minArgs: 0, maxArgs: 0, call: () => new data.BooleanData(value) });
  statusFunctions = [
    fn("success", status === "success"),
    fn("failure", status === "failure"),
    fn("cancelled", status === "cancelled"),
    fn("always", true),
  ];
  functionMap = new Map(statusFunctions.map(f => [f.name, f]));
}

function evaluate(text) {
  const lexed = new Lexer(text).lex();
  const expr = new Parser(lexed.tokens, names, statusFunctions).parse();
  return new Evaluator(expr, contexts, functionMap).evaluate();
}

// Split "a ${{ x }} b" into literal and expression parts; "}}" inside '...' literals does not end one.
function parts(template) {
  const out = [];
  let i = 0;
  while (i < template.length) {
    const start = template.indexOf("${{", i);
    if (start < 0) { out.push({ lit: template.slice(i) }); break; }
    if (start > i) out.push({ lit: template.slice(i, start) });
    let j = start + 3, quoted = false;
    while (j < template.length) {
      if (template[j] === "'") quoted = !quoted;
      else if (!quoted && template.startsWith("}}", j)) break;
      j++;
    }
    if (j >= template.length) throw new Error("unclosed ${{ in: " + template);
    out.push({ expr: template.slice(start + 3, j).trim() });
    i = j + 2;
  }
  return out;
}

const STATUS_CALL = /\b(success|failure|always|cancelled)\s*\(/i;
const evaluateItem = item => {
  try {
    if (item.kind === "condition") {
      let text = item.text.trim();
      const p = parts(text);
      if (p.length === 1 && p[0].expr !== undefined) text = p[0].expr;
      if (!STATUS_CALL.test(text)) text = `success() && (${text})`;
      return { ok: true, value: truthy(evaluate(text)) };
    }
    const p = parts(item.text);
    if (p.length === 1 && p[0].expr !== undefined) {
      const v = evaluate(p[0].expr);
      return { ok: true, value: v.kind === data.Kind.Null ? "" : v.coerceString() };
    }
    return { ok: true, value: p.map(x => x.lit !== undefined ? x.lit : evaluate(x.expr).coerceString()).join("") };
  } catch (err) {
    return { ok: false, error: String(err && err.message || err) };
  }
};
for await (const line of readline.createInterface({ input: process.stdin })) {
  const input = JSON.parse(line);
  setup(input);
  process.stdout.write(JSON.stringify(input.items.map(evaluateItem)) + "\n");
}
"""


def expressions_available() -> str | None:
    """None when node and @actions/expressions are installed, else the reason they are not."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (EXPRESSIONS_PACKAGE / "package.json").is_file():
        return f"{EXPRESSIONS_PACKAGE} is missing: run `npm install --no-audit --no-fund` in {REPO_ROOT}"
    return None


class ExpressionError(AssertionError):
    pass


class ExpressionEvaluator:
    """A node process running GitHub's expression library, answering one request per line."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            ["node", "--input-type=module", "-e", _EVALUATOR_JS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT,
        )

    def evaluate(self, items: list[tuple[str, str]], contexts: dict[str, Any], status: str = "success") -> list[Any]:
        """Evaluate ``(kind, text)`` items (kind ``template`` or ``condition``)."""
        if not items:
            return []
        assert self._proc.stdin is not None and self._proc.stdout is not None
        payload = json.dumps({"contexts": contexts, "items": [{"kind": k, "text": t} for k, t in items],
                              "status": status})
        self._proc.stdin.write(payload + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise ExpressionError(f"node failed: {self._proc.stderr.read() if self._proc.stderr else ''}")
        values = []
        for (kind, text), result in zip(items, json.loads(line)):
            if not result["ok"]:
                raise ExpressionError(f"cannot evaluate {kind} {text!r}: {result['error']}")
            values.append(result["value"])
        return values

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        self._proc.wait(timeout=30)
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream:
                stream.close()

    def __enter__(self) -> ExpressionEvaluator:  # noqa: PYI034 - not subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def evaluate_expressions(items: list[tuple[str, str]], contexts: dict[str, Any], status: str = "success") -> list[Any]:
    """One-off evaluation with GitHub's library (starts node once)."""
    with ExpressionEvaluator() as evaluator:
        return evaluator.evaluate(items, contexts, status)


def parse_command_file(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT / GITHUB_ENV syntax: ``name=value`` lines and ``name<<DELIM`` ... ``DELIM`` blocks."""
    values: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        heredoc = re.match(r"^([^=<]+)<<(.+)$", line)
        if heredoc:
            name, delimiter = heredoc.group(1), heredoc.group(2)
            body: list[str] = []
            while i < len(lines) and lines[i] != delimiter:
                body.append(lines[i])
                i += 1
            if i >= len(lines):
                raise AssertionError(f"unterminated {name}<<{delimiter} block")
            i += 1
            values[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
        else:
            raise AssertionError(f"malformed command file line: {line!r}")
    return values


@dataclass
class StepRun:
    id: str
    name: str
    ran: bool
    outcome: str  # success | failure | skipped
    outputs: dict[str, str] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, str]
    summary: str
    status: str

    def step(self, step_id: str) -> StepRun:
        return next(s for s in self.steps if s.id == step_id)

    @property
    def log(self) -> str:
        return "\n".join(f"--- {s.id} ({s.outcome})\n{s.stdout}{s.stderr}" for s in self.steps)


def run_composite_action(
    action_dir: Path,
    inputs: dict[str, str],
    *,
    workspace: Path,
    github: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    runner_os: str = "Linux",
    timeout: float = 600,
) -> ActionRun:
    """Run ``action_dir/action.yml`` as GitHub's runner runs a composite action's steps."""
    import yaml

    action = yaml.safe_load((action_dir / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    with ExpressionEvaluator() as evaluator:
        return _run_steps(action, action_dir, inputs, workspace=workspace, github=github, env=env,
                          runner_os=runner_os, timeout=timeout, evaluate_expressions=evaluator.evaluate)


def _run_steps(action: dict[str, Any], action_dir: Path, inputs: dict[str, str], *, workspace: Path,
               github: dict[str, Any] | None, env: dict[str, str] | None, runner_os: str, timeout: float,
               evaluate_expressions: Any) -> ActionRun:
    temp = Path(tempfile.mkdtemp(prefix="runner-temp-"))
    github_ctx: dict[str, Any] = {
        "action_path": str(action_dir), "workspace": str(workspace), "event_name": "push", "event": {},
        "ref": "refs/heads/main", "ref_name": "main", "ref_type": "branch", "token": "ghs_test_token",
        "repository": "acme/sample-ext", "sha": "0" * 40, "run_id": "1", "run_attempt": "1",
        **(github or {}),
    }
    runner_ctx = {"os": runner_os, "arch": "X64", "temp": str(temp), "name": "test-runner"}
    event_path = temp / "event.json"
    event_path.write_text(json.dumps(github_ctx["event"]), encoding="utf-8")
    base_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("GITHUB_", "RUNNER_", "INPUT_", "XCOMPAT_", "CI_", "GITLAB"))}
    base_env.update({
        "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTION_PATH": str(action_dir), "GITHUB_EVENT_NAME": github_ctx["event_name"],
        "GITHUB_REF": github_ctx["ref"], "GITHUB_REF_NAME": github_ctx["ref_name"],
        "GITHUB_REF_TYPE": github_ctx["ref_type"], "GITHUB_REPOSITORY": github_ctx["repository"],
        "GITHUB_SHA": github_ctx["sha"], "GITHUB_EVENT_PATH": str(event_path), "GITHUB_RUN_ID": github_ctx["run_id"],
        "GITHUB_SERVER_URL": "https://github.com", "RUNNER_TEMP": str(temp), "RUNNER_OS": runner_os,
        **(env or {}),
    })

    # Inputs: given values, else defaults (which may hold expressions, like ${{ github.token }}).
    declared = action.get("inputs", {}) or {}
    unknown = set(inputs) - set(declared)
    assert not unknown, f"inputs not declared by the action: {sorted(unknown)}"
    defaults = {name: str(spec.get("default", "")) for name, spec in declared.items() if name not in inputs}
    contexts: dict[str, Any] = {"github": github_ctx, "runner": runner_ctx, "env": {}, "steps": {},
                                "job": {"status": "success"}, "strategy": {}, "matrix": {}, "inputs": {}}
    evaluated = evaluate_expressions([("template", v) for v in defaults.values()], contexts)
    input_values = {**dict(zip(defaults, evaluated)), **inputs}
    for name, spec in declared.items():
        if spec.get("required") and not input_values.get(name):
            raise AssertionError(f"required input {name!r} not given")
    contexts["inputs"] = input_values

    job_env = dict(base_env)
    path_prefix: list[str] = []
    status = "success"
    runs: list[StepRun] = []
    summary_parts: list[str] = []
    for index, step in enumerate(action["runs"]["steps"]):
        step_id = step.get("id", f"__step{index}")
        contexts["env"] = {}
        contexts["job"] = {"status": status}
        condition = str(step.get("if", "success()"))
        name_tpl = str(step.get("name", step_id))
        [go, name] = evaluate_expressions([("condition", condition), ("template", name_tpl)], contexts, status)
        if not go:
            runs.append(StepRun(id=step_id, name=name, ran=False, outcome="skipped"))
            contexts["steps"][step_id] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            continue
        assert "uses" not in step, "nested actions are not run by this test runner"
        assert step.get("shell") == "bash", f"step {step_id}: composite run steps must name their shell"
        script = str(step["run"])
        assert "${{" not in script, f"step {step_id}: an expression inside run: is a template-injection sink"
        step_env_spec = {str(k): str(v) for k, v in (step.get("env") or {}).items()}
        values = evaluate_expressions([("template", v) for v in step_env_spec.values()], contexts, status)
        files = {name: temp / f"{name.lower()}_{uuid.uuid4().hex}" for name in
                 ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")}
        for path in files.values():
            path.touch()
        step_env = {**job_env, **dict(zip(step_env_spec, values)), **{k: str(v) for k, v in files.items()}}
        if path_prefix:
            step_env["PATH"] = os.pathsep.join([*path_prefix, step_env.get("PATH", "")])
        script_file = temp / f"step_{step_id}.sh"
        script_file.write_text(script, encoding="utf-8")
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)],
                              cwd=workspace, env=step_env, capture_output=True, text=True, timeout=timeout,
                              check=False)
        outcome = "success" if proc.returncode == 0 else "failure"
        outputs = parse_command_file(files["GITHUB_OUTPUT"].read_text(encoding="utf-8"))
        job_env.update(parse_command_file(files["GITHUB_ENV"].read_text(encoding="utf-8")))
        path_prefix = [p for p in files["GITHUB_PATH"].read_text().splitlines() if p] + path_prefix
        summary_parts.append(files["GITHUB_STEP_SUMMARY"].read_text(encoding="utf-8"))
        continue_on_error = str(step.get("continue-on-error", "false")).lower() == "true"
        conclusion = "success" if continue_on_error else outcome
        if conclusion == "failure":
            status = "failure"
        contexts["steps"][step_id] = {"outputs": outputs, "outcome": outcome, "conclusion": conclusion}
        runs.append(StepRun(id=step_id, name=name, ran=True, outcome=outcome, outputs=outputs,
                            stdout=proc.stdout, stderr=proc.stderr,
                            env={k: step_env[k] for k in step_env_spec}))
    # Action outputs are evaluated once the steps are done.
    out_specs = {name: str(spec["value"]) for name, spec in (action.get("outputs") or {}).items()}
    values = evaluate_expressions([("template", v) for v in out_specs.values()], contexts, status)
    shutil.rmtree(temp, ignore_errors=True)
    return ActionRun(steps=runs, outputs=dict(zip(out_specs, values)), summary="".join(summary_parts),
                     status=status)


# -- GitLab: the component and the include template -------------------------------------

GITLAB_COMPONENT = REPO_ROOT / "templates" / "xcompat.yml"
GITLAB_INCLUDE = REPO_ROOT / "templates" / "include" / "xcompat.gitlab-ci.yml"

_INCLUDE_HEADER = """\
# xcompat include template for GitLab versions or instances without CI/CD components.
#
#   include:
#     - project: org/xcompat-action
#       ref: <full commit SHA>   # pin: a tag can be moved
#       file: /templates/include/xcompat.gitlab-ci.yml
#   stages: [verify, test]
#   variables:
#     XCOMPAT_PROJECT_DIR: "."   # override any default below
#     # the same commit as `ref:` above, so the template and the tool are one version:
#     XCOMPAT_INSTALL_SOURCE: git+$CI_SERVER_URL/org/xcompat-action.git@<full commit SHA>
#
# Generated from templates/xcompat.yml (the CI/CD component): inputs become the global
# variables below, with the same defaults. Regenerate with:
#   python -m tests.helpers.action --write-gitlab-include
"""


def split_component(text: str) -> tuple[str, str]:
    """``(spec header, pipeline body)`` of a component file (``spec:`` document, ``---``, body)."""
    head, sep, body = text.partition("\n---\n")
    if not sep or not head.lstrip().startswith("spec:"):
        raise AssertionError("a component is a `spec:` document, then `---`, then the pipeline")
    return head + "\n", body


def gitlab_include_from_component(text: str) -> str:
    """The include template: the component's body with its inputs turned into global variables."""
    import yaml

    head, body = split_component(text)
    inputs = yaml.safe_load(head)["spec"]["inputs"]

    def default(name: str) -> str:
        value = inputs[name].get("default", "")
        if name == "install-source" and not value:
            # An include has no component context: the release tag of this version (see the header).
            from xcompat import __version__

            return f"git+$CI_SERVER_URL/org/xcompat-action.git@{__version__}"
        return ("true" if value else "false") if isinstance(value, bool) else str(value)

    variables: dict[str, str] = {}
    kept = []
    for line in body.splitlines():
        if re.fullmatch(r"\s+XCOMPAT_COMPONENT_SHA: \$\[\[ component\.sha \]\]", line):
            continue  # only read when XCOMPAT_INSTALL_SOURCE is empty, which it is not here
        match = re.fullmatch(r"\s+(XCOMPAT_\w+): \$\[\[ inputs\.([\w-]+) \]\]", line)
        if match:
            variables[match.group(1)] = match.group(2)
            continue
        kept.append(line)
    out = "\n".join(kept) + "\n"
    out = re.sub(r"\$\[\[ inputs\.(stage-[\w-]+) \]\]", lambda m: default(m.group(1)), out)
    if "$[[" in out:
        raise AssertionError("an input is used outside a job's variables: the include template cannot express it")
    lines = ["variables:"]
    for name, source in variables.items():
        lines.append(f"  {name}: {json.dumps(default(source))}  # {inputs[source].get('description', '')}".rstrip())
    return _INCLUDE_HEADER + "\n" + "\n".join(lines) + "\n\n" + out


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--write-gitlab-include"]:
        GITLAB_INCLUDE.parent.mkdir(parents=True, exist_ok=True)
        GITLAB_INCLUDE.write_text(gitlab_include_from_component(GITLAB_COMPONENT.read_text()))
        print(f"wrote {GITLAB_INCLUDE}")
    else:
        raise SystemExit("usage: python -m tests.helpers.action --write-gitlab-include")
