"""A keyed `faceoff restore` of a closed, signed campaign whose journal was forged: the
incumbent comes back (production never waits on the evidence), but nothing is signed or
sealed again, the command exits 2 naming the forged file, and the keyed audit still
catches the forgery.

Was: the restoration checked the bundle against its sums only, so a journal forged with
faceoff's own functions and re-hashed sums was folded into a new signed receipt and a new
seal, and the keyed audit then passed.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from faceoff.exits import Exit
from faceoff.formats.receipt import Receipt, verify_receipt
from faceoff.keys import SIGNING_KEY_FILE_ENV, init_key_pair
from flows.prefect.flow import campaign
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix
from tests.evidence.forgery import recompute_views, rehash, shave_ttft
from tests.foundation.cli import faceoff
from tests.lanes.helpers import gone, wait_for

pytestmark = pytest.mark.prefect

ATTEMPT = "cells/natural-600-c1/cand/attempt-1"
SEALED = ("SHA256SUMS", "SEAL.dsse.json")


def test_a_keyed_restore_of_a_forged_journal_is_refused_and_seals_nothing(
    prefect_harness: None, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = init_key_pair(tmp_path / "keys")
    monkeypatch.setenv(SIGNING_KEY_FILE_ENV, str(keys.private))
    data = matrix("forged-restore", [arm("inc", "incumbent", warmups=0),
                                     arm("cand", "candidate", warmups=0)])  # fmt: skip
    data["cells"] = data["cells"][:1]
    campaign(matrix=str(write_matrix(tmp_path, data)), workdir=str(workdir), return_state=True)
    bundle = workdir / "forged-restore"
    first = verify_receipt(bundle / "receipt.json")
    assert first.pid is not None and (bundle / "SEAL.dsse.json").is_file()
    os.killpg(first.pid, signal.SIGKILL)  # the incumbent is down: restore has work to do
    wait_for(lambda: gone(first.pid or 0), "the restored incumbent to die")

    shave_ttft(bundle, ATTEMPT)
    recompute_views(bundle)
    rehash(bundle)
    sealed = {name: (bundle / name).read_bytes() for name in SEALED}
    env = {SIGNING_KEY_FILE_ENV: str(keys.private)}

    done = faceoff("restore", "forged-restore", "--workdir", str(workdir), env=env)

    assert done.returncode == Exit.REFUSED, done.stdout + done.stderr
    assert f"{ATTEMPT}/journal.jsonl" in done.stderr and "not sealed again" in done.stderr
    assert "Traceback" not in done.stderr
    assert {name: (bundle / name).read_bytes() for name in SEALED} == sealed
    second = Receipt.read(bundle / "receipt.json")  # the incumbent is back, said unsigned
    assert second.outcome == "restored" and second.signature is None
    assert second.pid is not None and not gone(second.pid)
    audited = faceoff("audit", str(bundle), "--trust", str(keys.public))
    assert audited.returncode == Exit.FINDINGS, audited.stdout
    assert f"{ATTEMPT}/journal.jsonl" in audited.stdout
