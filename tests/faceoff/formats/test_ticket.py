"""A ticket's Markdown front matter: a round trip, and a malformed one named by its file."""

from __future__ import annotations

import pytest

from faceoff.errors import FaceoffError
from faceoff.formats.ticket import parse, render
from tests.tickets.test_cluster import RUNS, T0
from tickets.cluster import cluster


def test_front_matter_round_trips_and_reads_as_plain_key_values() -> None:
    (ticket,) = cluster(RUNS[:1], campaign="glm53", matrix_id="m" * 64, now=T0)
    text = render(ticket, "# body\n\ntext with: colons")
    assert text.startswith('---\nschema_version: 1\nid: "glm53-failed-contract-overrun"\n')
    assert 'cells:\n  - "controlled-10240-c1/exl3-r11"\n' in text
    parsed, body = parse(text, "t.md")
    assert parsed == ticket and body == "# body\n\ntext with: colons"


def test_a_malformed_ticket_is_an_error_naming_the_file() -> None:
    with pytest.raises(FaceoffError, match=r"t\.md: no front matter"):
        parse("# just markdown\n", "t.md")
    text = render(cluster(RUNS[:1], campaign="c", matrix_id="m", now=T0)[0], "b")
    with pytest.raises(FaceoffError, match=r"t\.md: front matter is not a valid ticket: status"):
        parse(text.replace('status: "open"', 'status: "maybe"'), "t.md")
