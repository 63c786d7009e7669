"""One set of checks: every refusal of `faceoff run` before the take-over is a preflight FAIL.

`faceoff run` (flows/cli/run.py `run`, then the flow up to `take_over`) refuses, besides its
preflight and its own arguments: an arm it could not start (`check_startable_arms`: a
secret not set, a host lane's program not on its PATH, an environment assignment written as
the program), a workdir that is a file, a live run holding the campaign's lock
(`refuse_if_running`), a successor whose source the ledger lacks or that has no ledger
(`check_source`, `required_ledger`), a ledger of a newer revision (`open_ledger`), a ledger
row or a campaign folder of another matrix (`open_campaign`, `write_frozen`), a changed
dataset file under a resumed campaign (`refuse_changed_sources`), and a foreign server on
the incumbent's port (`check_incumbent_port`). Each case below makes the condition on a real
host (files, a SQLite ledger, a listening simulator), shows the run's own check refusing it,
and the preflight FAILing the named check: a preflight that passes means the run starts.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from faceoff.credentials import NOBODY
from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from flows.campaign.context import CampaignContext
from flows.campaign.lock import CampaignLock, refuse_if_running
from flows.campaign.opening import refuse_changed_sources, write_frozen
from flows.campaign.preflight.host_checks import real_host, run_preflight
from flows.campaign.restore import restore_tools
from flows.campaign.succession import check_source
from flows.campaign.takeover import check_incumbent_port, check_startable_arms
from flows.cli.ledger_open import existing_ledger, required_ledger
from flows.cli.run import run
from ledger.campaigns import open_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from matrix.toml.reader import load_matrix
from simulator.launch import running
from tests.conftest import free_port
from tests.e2e.matrices import write_matrix

REPO = Path(__file__).resolve().parents[4]
SIM = {"lane": "simulator", "served_model": "sim-tiny", "simulator": {"profile": "tiny"}}
CELL = {"id": "c1", "kind": "natural", "input_tokens": 100, "concurrency": 1, "requests": 1}
SECRET = "FACEOFF_TEST_UNSET_SECRET"


@dataclass
class Host:
    """What a case set up: the matrix, the workdir and the environment both checks see."""

    path: Path
    frozen: FrozenMatrix
    workdir: Path
    environ: dict[str, str]

    @property
    def campaign_dir(self) -> Path:
        return self.workdir / self.frozen.matrix.campaign.name


def matrix(tmp: Path, incumbent: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    own = incumbent or {}
    inc = {} if "command" in own else SIM  # a process arm has no simulator section
    data: dict[str, Any] = {
        "schema_version": 1,
        "campaign": {"name": "refusals", "seed": 1},
        "arms": [inc | {"name": "inc", "role": "incumbent", "port": free_port()} | own,
                 SIM | {"name": "cand", "role": "candidate", "port": free_port()}],
        "cells": [CELL],
        "families": {"not_applicable": {"gpu_memory": "no GPUs on the test hosts"}},
    }  # fmt: skip
    return data | extra


def host_of(tmp: Path, data: dict[str, Any]) -> Host:
    path = write_matrix(tmp, data)
    return Host(
        path,
        freeze(load_matrix(path)),
        tmp / "runs",
        {k: v for k, v in os.environ.items() if k != SECRET},
    )


def process_arm(command: list[str]) -> dict[str, Any]:
    return {"lane": "process", "command": command, "served_model": "m"}


Refusal = Callable[[Host], None]
Case = Callable[[Path, ExitStack], tuple[Host, Refusal]]


def startable(host: Host) -> None:
    check_startable_arms(host.frozen.matrix, host.environ, sys.executable)


def a_program_not_installed(tmp: Path, _: ExitStack) -> tuple[Host, Refusal]:
    return host_of(
        tmp, matrix(tmp, process_arm(["/nonexistent/bin/vllm", "serve", "m"]))
    ), startable


def an_assignment_written_as_the_program(tmp: Path, _: ExitStack) -> tuple[Host, Refusal]:
    command = ["VLLM_ATTENTION_BACKEND=FLASHINFER", "vllm", "serve", "m"]
    return host_of(tmp, matrix(tmp, process_arm(command))), startable


def a_secret_not_set(tmp: Path, _: ExitStack) -> tuple[Host, Refusal]:
    return host_of(tmp, matrix(tmp, {"secrets": {"HF_TOKEN": SECRET}})), startable


def a_workdir_that_is_a_file(tmp: Path, _: ExitStack) -> tuple[Host, Refusal]:
    host = host_of(tmp, matrix(tmp))
    host.workdir.write_text("not a folder")
    return host, lambda h: run(h.path, h.workdir, None)  # refused before its preflight


def a_run_in_progress(tmp: Path, stack: ExitStack) -> tuple[Host, Refusal]:
    host = host_of(tmp, matrix(tmp))
    host.campaign_dir.mkdir(parents=True)
    stack.enter_context(CampaignLock(host.campaign_dir))
    return host, lambda h: refuse_if_running(h.campaign_dir)


def a_successor_without_a_ledger(tmp: Path, _: ExitStack) -> tuple[Host, Refusal]:
    host = host_of(tmp, matrix(tmp, campaign={"name": "refusals", "seed": 1,
                                              "successor_of": "last-week"}))  # fmt: skip
    host.workdir.mkdir()
    return host, lambda h: required_ledger(existing_ledger(None, h.workdir), None, h.workdir)


def a_successor_of_an_unknown_campaign(tmp: Path, _: ExitStack) -> tuple[Host, Refusal]:
    host = host_of(tmp, matrix(tmp, campaign={"name": "refusals", "seed": 1,
                                              "successor_of": "last-week"}))  # fmt: skip
    engine = open_ledger(resolve_url(None, host.workdir))
    return host, lambda h: check_source(engine, h.frozen, NOBODY)


def a_ledger_of_a_newer_revision(tmp: Path, _: ExitStack) -> tuple[Host, Refusal]:
    host = host_of(tmp, matrix(tmp))
    url = resolve_url(None, host.workdir)
    with open_ledger(url).begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'ffffffffffff'"))
    return host, lambda _: open_ledger(url).dispose()


def a_ledger_row_of_another_matrix(tmp: Path, _: ExitStack) -> tuple[Host, Refusal]:
    host = host_of(tmp, matrix(tmp))
    engine = open_ledger(resolve_url(None, host.workdir))
    with session_scope(engine) as session:
        open_campaign(session, name="refusals", matrix_id="0" * 64,
                      evidence_dir=host.campaign_dir, now=lambda: datetime.now(UTC))  # fmt: skip

    def refused(h: Host) -> None:
        with session_scope(engine) as session:
            open_campaign(session, name="refusals", matrix_id=h.frozen.matrix_id,
                          evidence_dir=h.campaign_dir, now=lambda: datetime.now(UTC))  # fmt: skip

    return host, refused


def a_folder_of_another_matrix(tmp: Path, _: ExitStack) -> tuple[Host, Refusal]:
    host = host_of(tmp, matrix(tmp))
    other = host_of(tmp, matrix(tmp, campaign={"name": "refusals", "seed": 2}))
    host.campaign_dir.mkdir(parents=True)
    write_frozen(other.frozen, host.campaign_dir)
    return host, lambda h: write_frozen(h.frozen, h.campaign_dir)


def a_changed_dataset_file(tmp: Path, _: ExitStack) -> tuple[Host, Refusal]:
    (tmp / "data").mkdir()
    shutil.copy(REPO / "matrix/examples/data/chat-50.jsonl", tmp / "data/chat.jsonl")
    cell = {"id": "chat", "kind": "dataset", "input_tokens": 1024, "concurrency": 1,
            "requests": 2, "dataset": {"file": "data/chat.jsonl", "format": "openai"}}  # fmt: skip
    data = matrix(tmp, cells=[cell])
    frozen_then = host_of(tmp, data)
    frozen_then.campaign_dir.mkdir(parents=True)
    write_frozen(frozen_then.frozen, frozen_then.campaign_dir)
    with (tmp / "data/chat.jsonl").open("a") as edited:
        edited.write('{"messages": [{"role": "user", "content": "one more"}]}\n')
    return host_of(tmp, data), lambda h: refuse_changed_sources(h.frozen, h.campaign_dir)


def a_foreign_server_on_the_incumbents_port(tmp: Path, stack: ExitStack) -> tuple[Host, Refusal]:
    stranger = stack.enter_context(running("tiny", time_scale=10.0))
    host = host_of(tmp, matrix(tmp, {"port": stranger.port}))

    def refused(h: Host) -> None:
        tools = restore_tools(h.environ)
        engine = open_ledger(resolve_url(None, h.workdir))
        check_incumbent_port(CampaignContext(h.frozen, h.campaign_dir, h.workdir, engine,
                                             tools, None))  # fmt: skip

    return host, refused


CASES: list[tuple[Case, str, str]] = [  # the case, the check that FAILs, words of its finding
    (a_program_not_installed, "programs", "'/nonexistent/bin/vllm' of arm 'inc' is not found"),
    (an_assignment_written_as_the_program, "programs", "'VLLM_ATTENTION_BACKEND=FLASHINFER'"),
    (a_secret_not_set, "secrets", f"{SECRET} (secret HF_TOKEN) not set"),
    (a_workdir_that_is_a_file, "disk", "is a file, not a folder"),
    (a_run_in_progress, "campaign", "the campaign is being run right now"),
    (a_successor_without_a_ledger, "ledger", "no campaign 'last-week' for successor_of"),
    (a_successor_of_an_unknown_campaign, "ledger", "which the ledger does not know"),
    (a_ledger_of_a_newer_revision, "ledger", "newer than this faceoff's"),
    (a_ledger_row_of_another_matrix, "ledger", "exists with matrix 000000000000"),
    (a_folder_of_another_matrix, "campaign", "the folder holds campaign files of matrix"),
    (a_changed_dataset_file, "campaign", "data/chat.jsonl"),
    (a_foreign_server_on_the_incumbents_port, "ports", "no lane faceoff started"),
]


@contextmanager
def made(case: Case, tmp: Path) -> Iterator[tuple[Host, Refusal]]:
    with ExitStack() as stack:
        yield case(tmp, stack)


@pytest.mark.parametrize(("case", "check", "words"), CASES, ids=[c.__name__ for c, *_ in CASES])
def test_each_refusal_of_run_before_the_take_over_is_a_preflight_fail(
    case: Case, check: str, words: str, tmp_path: Path
) -> None:
    with made(case, tmp_path) as (host, refused):
        with pytest.raises(FaceoffError):
            refused(host)
        report = run_preflight(
            host.frozen, real_host(host.workdir, host.environ, UTC, db=None), pilot=False
        )
    failed = {r.check: r.finding for r in report.failures}
    assert check in failed, [r.line for r in report.checks if r.status.value != "ok"]
    assert words in failed[check]
    assert not report.passed
