"""comparison.json read back across format versions (evidence.bundle.upgrade)."""

from __future__ import annotations

import pytest

from evidence.bundle.upgrade import upgraded
from evidence.comparison.model import COMPARISON_VERSION
from faceoff.errors import FaceoffError


def test_an_eleven_moves_to_the_current_version_keeping_every_field() -> None:
    older = {"schema_version": 11, "campaign": "night", "cells": [{"id": "a"}]}
    found = upgraded(older)
    assert found == {**older, "schema_version": COMPARISON_VERSION}
    assert older["schema_version"] == 11  # pure: the input is left as it was


REFUSED = [(COMPARISON_VERSION + 1, "Upgrade faceoff"), (3, "older faceoff's audit"), ("x", "Upg")]


@pytest.mark.parametrize(("version", "fix"), REFUSED)
def test_a_version_it_cannot_read_is_refused_saying_what_to_do(version: object, fix: str) -> None:
    with pytest.raises(FaceoffError, match=fix) as caught:
        upgraded({"schema_version": version}, "b/comparison.json")
    assert "b/comparison.json" in str(caught.value)
