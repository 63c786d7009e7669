"""comparison.json read back across format versions (faceoff.formats.bundle.comparison.upgraded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evidence.bundle.schema_export import SCHEMA_PATH
from faceoff.errors import FaceoffError
from faceoff.formats.bundle.comparison import COMPARISON_VERSION, Comparison, upgraded


def test_an_eleven_moves_to_the_current_version_keeping_every_field() -> None:
    older = {"schema_version": 11, "campaign": "night", "cells": [{"id": "a"}]}
    found = upgraded(older)
    assert found == {**older, "schema_version": COMPARISON_VERSION}
    assert older["schema_version"] == 11  # pure: the input is left as it was


REFUSED = [(COMPARISON_VERSION + 1, "Upgrade faceoff"), (3, "faceoff that wrote it"), ("x", "Upg")]


@pytest.mark.parametrize(("version", "fix"), REFUSED)
def test_a_version_it_cannot_read_is_refused_saying_what_to_do(version: object, fix: str) -> None:
    with pytest.raises(FaceoffError, match=fix) as caught:
        upgraded({"schema_version": version}, "b/comparison.json")
    assert "b/comparison.json" in str(caught.value)


def test_comparison_read_moves_an_older_file_forward(tmp_path: Path) -> None:
    schema = json.loads(Path(SCHEMA_PATH).read_text())
    assert schema["properties"]["schema_version"]["const"] == COMPARISON_VERSION
    path = tmp_path / "comparison.json"
    path.write_text(json.dumps({"schema_version": 11}))
    with pytest.raises(FaceoffError, match="not a valid Comparison") as caught:
        Comparison.read(path)  # moved to 12, then validated: the fields are missing
    assert "schema_version" not in str(caught.value)
