"""The preflight's checks by name, what each looks at, and how a result is made.

The names are what ``--waive`` takes and what the checklist, ``preflight.json`` and the
card show; docs/flows.md's table of checks carries the same lines (a test compares).
"""

from __future__ import annotations

from types import MappingProxyType

from faceoff.formats.preflight import CheckResult, CheckStatus

CHECKS = MappingProxyType(
    {
        "gpus": "every gpu_ids entry is a GPU NVML sees, and no process the take-over will not "
        "stop holds memory on it (a simulator arm's gpu_ids are its lane's virtual GPUs: NVML "
        "is not asked)",
        "gpu_ids": "an arm has gpu_ids wherever the gpu_memory family is required (without "
        "them every cell would be blocked family_missing)",
        "parallel": "tensor × pipeline × data parallel sizes in the engine flags fit the arm's "
        "GPU ids",
        "lane_settings": "settings a lane would ignore or refuse after the take-over: an image "
        "on a process lane, memory sizes Docker misreads, a vLLM image without engine, an "
        "unknown reasoning effort",
        "images": "each Docker arm's image is in the local store by its digest, or its "
        "registry has that digest now",
        "mounts": "each mount source is an absolute path that exists",
        "model_path": "a vLLM arm's model argument lies under a mount target (Docker) or "
        "exists (process)",
        "weights": "each weights_manifest directory exists on this host (through the mounts)",
        "context": "the model's config.json limit covers the arm's context and every cell's "
        "input plus max_tokens",
        "secrets": "every [arms.secrets] and router token variable is set in this environment",
        "programs": "each host lane's program is found on the PATH its process gets (the "
        "command's first word: an engine not installed, or a variable written before it)",
        "ports": "every arm's port is free, or held by a lane the take-over stops",
        "incumbent": "the serving incumbent answers /health and /v1/models as the incumbent "
        "arm the receipt will restore",
        "disk": "the workdir is a folder (or will be made), with free space for the bundle's "
        "estimated size, with margin",
        "prefect_home": "Prefect's home (PREFECT_HOME, else <workdir>/.prefect) is writable",
        "ledger": "the ledger answers and is at this faceoff's revision (or will be upgraded); "
        "a successor's source campaign is closed there, its bundle sealed and intact; a "
        "campaign it knows was opened with this matrix",
        "campaign": "no other run of the campaign is in progress, and its folder holds this "
        "matrix (its dataset and trace files unchanged) or nothing yet",
        "protected_files": "every protected file is a readable regular file",
        "rule": "the declared rule counts no probe cell a model may fail for what it is (a "
        "needle it cannot recall), which would end the rule in no decision",
        "fields": "fields of the matrix that contradict each other where that may be meant: arms "
        "that run one recipe, differing served model ids, a startup deadline of seconds, "
        "a memory share above 1, a request deadline beyond its cell's, a rehearsal's "
        "relaxations on a GPU night, an engine flag the pinned vLLM does not know "
        "(matrix/coherence/findings.py)",
        "power": "every rule criterion is decidable as planned in each counted cell (80 % "
        "power at the rule's confidence, the variance of earlier nights or the default); a "
        "WARN names the cell, the metric and the requests needed",
        "time": "the worst case by the deadlines and an estimate (earlier nights of the same "
        "cells, else the plan) against the campaign's window or deadline",
    }
)


def ok(check: str, subject: str, finding: str) -> CheckResult:
    return _result(check, subject, CheckStatus.OK, finding, None)


def warn(check: str, subject: str, finding: str, fix: str) -> CheckResult:
    return _result(check, subject, CheckStatus.WARN, finding, fix)


def fail(check: str, subject: str, finding: str, fix: str) -> CheckResult:
    return _result(check, subject, CheckStatus.FAIL, finding, fix)


def _result(
    check: str, subject: str, status: CheckStatus, finding: str, fix: str | None
) -> CheckResult:
    assert check in CHECKS, check
    return CheckResult(check=check, subject=subject, status=status, finding=finding, fix=fix)


def arm_subject(name: str) -> str:
    return f"arm {name}"
