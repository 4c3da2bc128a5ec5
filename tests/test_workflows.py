"""The GitHub workflows, linted offline by actionlint and zizmor."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; run `make install` (it is in the test extra)")
    return found


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True)


def test_actionlint_finds_nothing():
    result = run(tool("actionlint"), "-no-color")
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_finds_nothing():
    result = run(tool("zizmor"), "--offline", "--no-progress", str(WORKFLOWS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_never_pull_request_target():
    for workflow in WORKFLOWS.glob("*.y*ml"):
        assert "pull_request_target" not in workflow.read_text(), workflow


def test_lint_catches_a_planted_mistake(tmp_path):
    # A lint that cannot fail proves nothing: plant an unpinned action and
    # an undefined expression, and expect both tools to object.
    planted = tmp_path / ".github" / "workflows"
    planted.mkdir(parents=True)
    (planted / "bad.yml").write_text(
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - uses: actions/checkout@v5\n      - run: echo ${{ github.nope }}\n"
    )
    lint = run(tool("actionlint"), "-no-color", str(planted / "bad.yml"))
    assert lint.returncode != 0 and "nope" in lint.stdout
    audit = run(tool("zizmor"), "--offline", "--no-progress", str(planted))
    assert audit.returncode != 0 and "unpinned" in audit.stdout


# --- Rules actionlint and zizmor do not know: each has a planted fault. ---

import yaml  # noqa: E402


def load(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on` as True.
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def job_problems(doc: dict, name: str) -> list[str]:
    """Every job has a timeout; only a publish job in a `pypi` or Pages
    environment may hold id-token: write; nothing is granted workflow-wide."""
    problems = []
    if doc.get("permissions") != {}:
        problems.append(f"{name}: top-level permissions must be {{}} (each job asks for its own)")
    for job_id, job in doc.get("jobs", {}).items():
        if "timeout-minutes" not in job:
            problems.append(f"{name}: job {job_id} has no timeout-minutes")
        if (job.get("permissions") or {}).get("id-token") == "write":
            env = job.get("environment") or {}
            env_name = env.get("name") if isinstance(env, dict) else env
            if env_name not in {"pypi", "github-pages"}:
                problems.append(f"{name}: job {job_id} has id-token: write outside a protected environment")
    return problems


def test_every_job_has_a_timeout_and_least_privilege():
    problems = []
    for workflow in sorted(WORKFLOWS.glob("*.y*ml")):
        problems += job_problems(load(workflow), workflow.name)
    assert not problems, "\n".join(problems)


def test_job_rules_catch_planted_faults():
    planted = {
        "permissions": {"contents": "write"},
        "jobs": {
            "slow": {"runs-on": "ubuntu-24.04", "steps": []},
            "leaky": {"runs-on": "ubuntu-24.04", "timeout-minutes": 5, "permissions": {"id-token": "write"}},
        },
    }
    assert job_problems(planted, "bad.yml") == [
        "bad.yml: top-level permissions must be {} (each job asks for its own)",
        "bad.yml: job slow has no timeout-minutes",
        "bad.yml: job leaky has id-token: write outside a protected environment",
    ]


def release_problems(doc: dict) -> list[str]:
    """Publishing happens on a v* tag, by trusted publishing, from the pypi environment."""
    problems = []
    tags = (doc.get("on") or {}).get("push", {}).get("tags", [])
    if tags != ["v*"] or set(doc["on"]) != {"push"}:
        problems.append("release.yml must run only on pushed tags v*")
    publishers = [
        (job_id, job)
        for job_id, job in doc["jobs"].items()
        if any("gh-action-pypi-publish" in step.get("uses", "") for step in job.get("steps", []))
    ]
    if len(publishers) != 1:
        problems.append(f"release.yml: expected one job publishing to PyPI, found {len(publishers)}")
    for job_id, job in publishers:
        if (job.get("environment") or {}).get("name") != "pypi":
            problems.append(f"release.yml: job {job_id} publishes outside the pypi environment")
        if job.get("permissions") != {"id-token": "write"}:
            problems.append(f"release.yml: job {job_id} must have exactly id-token: write")
        for step in job.get("steps", []):
            if "password" in (step.get("with") or {}):
                problems.append(f"release.yml: job {job_id} passes a stored token; use trusted publishing")
    for job_id, job in doc["jobs"].items():
        if job_id not in dict(publishers) and "id-token" in (job.get("permissions") or {}):
            problems.append(f"release.yml: job {job_id} has id-token but does not publish")
    runs = " ".join(step.get("run", "") for job in doc["jobs"].values() for step in job.get("steps", []))
    if "tests/support/release.py" not in runs or "--tag" not in runs:
        problems.append("release.yml: does not run the dry run (tests/support/release.py --tag)")
    if "merge-base --is-ancestor" not in runs:
        problems.append("release.yml: does not check that the tag is on main")
    return problems


def test_release_workflow_publishes_by_trusted_publishing_on_tags():
    assert release_problems(load(WORKFLOWS / "release.yml")) == []


def test_release_rules_catch_planted_faults():
    doc = load(WORKFLOWS / "release.yml")
    doc["on"] = {"push": {"branches": ["main"]}}
    doc["jobs"]["publish"]["environment"] = {"name": "production"}
    doc["jobs"]["publish"]["permissions"] = {"id-token": "write", "contents": "write"}
    doc["jobs"]["publish"]["steps"][-1]["with"] = {"password": "${{ secrets.PYPI_TOKEN }}"}
    doc["jobs"]["build"]["permissions"]["id-token"] = "write"
    assert release_problems(doc) == [
        "release.yml must run only on pushed tags v*",
        "release.yml: job publish publishes outside the pypi environment",
        "release.yml: job publish must have exactly id-token: write",
        "release.yml: job publish passes a stored token; use trusted publishing",
        "release.yml: job build has id-token but does not publish",
    ]


def build_job_problems(doc: dict) -> list[str]:
    """The site build installs what building needs: the docs extra, not the
    test extra, not npm's tools (make install and make build bring both)."""
    runs = [step.get("run", "") for step in doc["jobs"]["build"]["steps"]]
    problems = []
    for run in runs:
        if "make install" in run or "make build" in run or "npm " in run:
            problems.append(f"ci.yml build job installs more than building needs: {run.strip()!r}")
        if "[docs,test]" in run or "[test" in run:
            problems.append(f"ci.yml build job installs the test extra: {run.strip()!r}")
    if not any("'.[docs]'" in run and "-c constraints.txt" in run for run in runs):
        problems.append("ci.yml build job does not install '.[docs]' with -c constraints.txt")
    return problems


def test_build_job_installs_only_what_building_needs():
    assert build_job_problems(load(WORKFLOWS / "ci.yml")) == []


def test_build_job_rule_catches_a_planted_fault():
    doc = load(WORKFLOWS / "ci.yml")
    doc["jobs"]["build"]["steps"] = [{"run": "make build"}]
    assert build_job_problems(doc) == [
        "ci.yml build job installs more than building needs: 'make build'",
        "ci.yml build job does not install '.[docs]' with -c constraints.txt",
    ]


def test_dependabot_and_codeowners_cover_what_is_pinned():
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text(encoding="utf-8"))
    ecosystems = {update["package-ecosystem"] for update in config["updates"]}
    assert ecosystems == {"github-actions", "pip", "npm"}, ecosystems
    owners = (ROOT / ".github" / "CODEOWNERS").read_text(encoding="utf-8").splitlines()
    assert any(line.split()[:1] == ["/.github/"] and "@" in line for line in owners), owners


def test_ci_run_pins_torch_and_its_dependencies():
    # torch, transformers and the rest install with their whole closure pinned:
    # constraints-torch.txt (make lock) must name every package .ci/run asks for.
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "-c constraints-torch.txt" in script
    pinned = {
        line.split("==")[0]
        for line in (ROOT / "constraints-torch.txt").read_text(encoding="utf-8").splitlines()
        if "==" in line
    }
    for package in ("torch", "transformers", "rotary-embedding-torch", "einops", "huggingface-hub", "tokenizers"):
        assert package in pinned, f"constraints-torch.txt does not pin {package}"


def canary_problems(doc: dict, script: str) -> list[str]:
    """The canary runs weekly and by hand, installs without the lock, runs
    make test through .ci/canary, and only its report job may write issues."""
    problems = []
    triggers = doc.get("on") or {}
    if "schedule" not in triggers or "workflow_dispatch" not in triggers:
        problems.append("canary.yml must run on a schedule and by hand (workflow_dispatch)")
    runs = " ".join(step.get("run", "") for job in doc["jobs"].values() for step in job.get("steps", []))
    if "bash .ci/canary" not in runs:
        problems.append("canary.yml does not run .ci/canary")
    commands = [line for line in script.splitlines() if not line.lstrip().startswith("#")]
    if any("constraints" in line for line in commands):
        problems.append(".ci/canary installs with constraints: the canary must take the newest releases")
    if not any("make test" in line for line in commands):
        problems.append(".ci/canary does not run make test")
    for job_id, job in doc["jobs"].items():
        writes = (job.get("permissions") or {}).get("issues") == "write"
        if writes and (job.get("if") != "failure()" or "gh issue" not in str(job.get("steps"))):
            problems.append(f"canary.yml: job {job_id} may write issues but is not the report job run on failure")
        if not writes and "gh issue" in str(job.get("steps")):
            problems.append(f"canary.yml: job {job_id} reports to an issue without issues: write")
    return problems


def test_the_canary_takes_the_newest_releases_and_reports_one_issue():
    doc = load(WORKFLOWS / "canary.yml")
    assert canary_problems(doc, (ROOT / ".ci" / "canary").read_text(encoding="utf-8")) == []


def test_canary_rules_catch_planted_faults():
    doc = load(WORKFLOWS / "canary.yml")
    doc["on"] = {"push": None}
    doc["jobs"]["newest"]["permissions"]["issues"] = "write"
    doc["jobs"]["newest"]["steps"] = [{"run": "make test"}]
    script = "pip install -c constraints.txt -e .\npytest\n"
    assert canary_problems(doc, script) == [
        "canary.yml must run on a schedule and by hand (workflow_dispatch)",
        "canary.yml does not run .ci/canary",
        ".ci/canary installs with constraints: the canary must take the newest releases",
        ".ci/canary does not run make test",
        "canary.yml: job newest may write issues but is not the report job run on failure",
    ]
