"""SLO declarations: validation, the campaign default and a cell's override, and the
per-request test goodput counts with."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from matrix.slo import Slo, request_meets
from matrix.toml.reader import load_matrix
from tests.foundation.test_matrix import MINIMAL, write


def test_an_slo_without_any_bound_is_refused() -> None:
    with pytest.raises(ValidationError, match="at least one of ttft_ms"):
        Slo(attainment=0.95)


def test_a_request_meets_an_slo_only_when_every_declared_bound_holds() -> None:
    slo = Slo(ttft_ms=500, tpot_ms=50)
    assert request_meets(slo, ttft_s=0.4, tpot_s=0.04, e2e_s=99.0)
    assert not request_meets(slo, ttft_s=0.6, tpot_s=0.04, e2e_s=1.0)
    assert not request_meets(slo, ttft_s=0.4, tpot_s=0.051, e2e_s=1.0)


def test_an_undefined_metric_with_a_bound_does_not_meet_it() -> None:
    assert not request_meets(Slo(tpot_ms=50), ttft_s=0.1, tpot_s=None, e2e_s=1.0)
    assert request_meets(Slo(ttft_ms=500), ttft_s=0.1, tpot_s=None, e2e_s=None)


def test_a_cell_inherits_the_campaign_slo_unless_it_declares_its_own(tmp_path: Path) -> None:
    text = MINIMAL.replace("seed = 7\n", "seed = 7\nslo = { ttft_ms = 800 }\n")
    text += '\n[[cells]]\nkind = "natural"\ninput_tokens = 512\nconcurrency = 1\nrequests = 2\n'
    text += "slo = { e2e_ms = 9000, attainment = 0.95 }\n"
    matrix = load_matrix(write(tmp_path, text))
    inherited, own = matrix.cells
    assert matrix.slo_of(inherited) == Slo(ttft_ms=800)
    assert matrix.slo_of(own) == Slo(e2e_ms=9000, attainment=0.95)


def test_an_unset_slo_is_left_out_of_the_frozen_content(tmp_path: Path) -> None:
    """Matrices frozen before SLOs existed keep their ids: the id hashes this dump."""
    dump = load_matrix(write(tmp_path, MINIMAL)).model_dump(mode="json")
    assert "slo" not in dump["campaign"]
    assert all("slo" not in cell for cell in dump["cells"])
