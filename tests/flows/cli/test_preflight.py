"""`faceoff preflight` as the operator runs it: the shipped examples, the checklist and its
`--json` (validated against the shipped schema), exit 2 on a FAIL, and waivers named
and reasoned or refused."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import free_port
from tests.foundation.cli import REPO, faceoff
from tests.foundation.output_schemas import shaped

EXAMPLES = REPO / "matrix" / "examples"
# What a host set up for the GLM matrix has and this one lacks: its images, model folders,
# secrets and operator files. A FAIL of any other check here would be a false one.
CAMPAIGN_HOST_FACTS = {"gpus", "images", "mounts", "weights", "secrets", "protected_files"}


def example_on_free_ports(tmp_path: Path) -> Path:
    """sim-faceoff as shipped, on free ports: this shared host may run another demo's
    incumbent on 18101, which the preflight rightly calls foreign."""
    text = (EXAMPLES / "sim-faceoff.toml").read_text(encoding="utf-8")
    for port in ("18101", "18102"):
        text = text.replace(f"port = {port}", f"port = {free_port()}")
    path = tmp_path / "sim-faceoff.toml"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "data").symlink_to(EXAMPLES / "data")  # the fidelity corpus it names
    return path


def test_the_simulator_example_passes_in_seconds_touching_nothing(tmp_path: Path) -> None:
    workdir = tmp_path / "runs"
    result = faceoff("preflight", str(example_on_free_ports(tmp_path)), "--workdir", str(workdir))
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.splitlines()[-1]
    assert re.match(
        r"preflight of sim-faceoff on .+: 24 ok, 5 WARN, 0 FAIL in \d\.\d s: passed$", last
    )
    warned, *power = [line for line in result.stdout.splitlines() if line.startswith("WARN")]
    assert "incumbent" in warned and "the incumbent is not serving" in warned
    # no earlier night teaches the variance: the rule's four criteria are planned with the
    # conservative default, which 3 passes of 4 requests cannot decide
    assert [line.split()[2:4] for line in power] == [
        ["cell", f"natural-{n}-c1:"] for n in (8192, 31600, 8192, 31600)
    ]
    assert "TTFT p50: 4 requests give" in power[0] and "per pass" in power[0]
    took = float(re.search(r"in (\d+\.\d) s", last)[1])  # type: ignore[index]
    assert took < 3
    assert not workdir.exists()


def test_the_glm_example_without_gpus_fails_only_what_its_gpu_host_would_pass(
    tmp_path: Path,
) -> None:
    path = EXAMPLES / "glm53-exl3-vs-nvfp4.toml"
    result = faceoff("preflight", str(path), "--workdir", str(tmp_path / "runs"), "--json")
    assert result.returncode == 2
    report = shaped("preflight", result.stdout)
    failed = {c["check"] for c in report["checks"] if c["status"] == "FAIL"}
    assert "gpus" in failed and failed <= CAMPAIGN_HOST_FACTS, failed
    gpus = [c for c in report["checks"] if c["check"] == "gpus"]
    assert all(c["finding"].startswith("no NVIDIA GPU") for c in gpus)
    time = next(c for c in report["checks"] if c["check"] == "time")
    assert (
        time["status"] == "WARN" and "the estimate fits, the worst case does not" in time["finding"]
    )


def test_a_waiver_needs_a_known_check_and_a_reason(tmp_path: Path) -> None:
    path = example_on_free_ports(tmp_path)
    unknown = faceoff("preflight", str(path), "--waive", "gpu", "--reason", "x")
    assert unknown.returncode == 2 and "no preflight check 'gpu'" in unknown.stderr
    assert "gpus, gpu_ids" in unknown.stderr
    bare = faceoff("preflight", str(path), "--waive", "gpus")
    assert bare.returncode == 2 and 'Add --reason "why the run goes on"' in bare.stderr
    unused = faceoff(
        "preflight", str(path), "--workdir", str(tmp_path / "runs"),
        "--waive", "gpus", "--reason", "simulators",
    )  # fmt: skip
    assert unused.returncode == 0, unused.stdout + unused.stderr
    assert "waiver of gpus: nothing failed there; it changes nothing" in unused.stdout


def test_the_docs_table_of_checks_is_the_catalog() -> None:
    from flows.campaign.preflight.catalog import CHECKS

    docs = (REPO / "docs" / "flows.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z_]+)` \| (.+) \|$", docs.split("## Before the night")[1], re.M)
    assert dict(rows[: len(CHECKS)]) == dict(CHECKS)
