"""The journal writer thread and the tolerant reader, on real files."""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import pytest

from faceoff.errors import FaceoffError
from faceoff.files import JsonlAppender
from faceoff.formats.attempt.journal import RequestOutcome, Status
from tests.workload.builders import failed
from workload.journal import JournalWriter, read_journal


def outcomes(n: int) -> list[RequestOutcome]:
    return [failed(Status.HTTP_ERROR).model_copy(update={"index": i}) for i in range(n)]


def test_writer_keeps_submission_order_and_calls_back_after_each_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    seen: list[tuple[int, int]] = []

    def on_written(outcome: RequestOutcome) -> None:
        # called after the line's group was fsync'd: the file already holds it
        seen.append((outcome.index, len(path.read_text().splitlines())))

    with JournalWriter(path, on_written=on_written) as writer:
        for outcome in outcomes(50):
            writer.submit(outcome)
    contents = read_journal(path)
    assert [o.index for o in contents.outcomes] == list(range(50))
    assert contents.intact
    assert [index for index, _ in seen] == list(range(50))
    assert all(lines > index for index, lines in seen)
    assert writer.written == 50


def test_lines_are_made_on_the_writer_thread_and_fsync_d_a_group_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client hands over a function that makes the line; the lines that waited while the
    writer was busy are written one by one and fsync'd together, and only then reported."""
    syncs: list[int] = []
    real_sync = JsonlAppender.sync

    def counted_sync(appender: JsonlAppender) -> None:
        syncs.append(len(appender.path.read_text().splitlines()))
        real_sync(appender)

    monkeypatch.setattr(JsonlAppender, "sync", counted_sync)
    path, release, makers = tmp_path / "journal.jsonl", threading.Event(), []
    lines = outcomes(20)

    def first() -> RequestOutcome:
        makers.append(threading.current_thread().name)
        assert release.wait(30), "the test never released the writer"
        return lines[0]

    with JournalWriter(path) as writer:
        writer.submit(first)
        for line in lines[1:]:
            writer.submit(functools.partial(lambda o: o, line))
        release.set()
    assert makers == ["journal-writer"]
    assert [o.index for o in read_journal(path).outcomes] == list(range(20))
    assert syncs[-1] == 20 and len(syncs) <= 2  # the 19 that waited: one group


def test_reader_reports_a_torn_tail_and_keeps_complete_lines(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with JournalWriter(path) as writer:
        for outcome in outcomes(3):
            writer.submit(outcome)
    line = path.read_text().splitlines()[0]
    with path.open("a") as handle:
        handle.write(line[: len(line) // 2])
    contents = read_journal(path)
    assert len(contents.outcomes) == 3
    assert contents.torn_tail == line[: len(line) // 2]
    assert not contents.intact


def test_reader_reports_lines_that_are_not_outcomes(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    good = outcomes(1)[0].model_dump_json()
    path.write_text(f'{good}\n{{"schema_version": 2}}\nnot json\n{good}\n')
    contents = read_journal(path)
    assert len(contents.outcomes) == 2
    assert contents.bad_lines == [3]
    assert len(contents.invalid) == 1 and contents.invalid[0].startswith("record 2: ")


def test_missing_journal_reads_as_empty(tmp_path: Path) -> None:
    contents = read_journal(tmp_path / "absent.jsonl")
    assert contents.outcomes == [] and contents.intact


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_line_that_cannot_be_written_surfaces_on_close() -> None:
    writer = JournalWriter(Path("/dev/full"))
    writer.submit(outcomes(1)[0])
    with pytest.raises(FaceoffError, match="could not append to the journal"):
        writer.close()
    assert writer.written == 0


def test_outcome_lines_round_trip_exactly(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    original = outcomes(1)[0]
    with JournalWriter(path) as writer:
        writer.submit(original)
    assert read_journal(path).outcomes == [original]


def test_a_failing_progress_callback_never_stops_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"

    def on_written(outcome: RequestOutcome) -> None:
        raise BrokenPipeError("stdout closed")

    with JournalWriter(path, on_written=on_written) as writer:
        for outcome in outcomes(3):
            writer.submit(outcome)
    assert len(read_journal(path).outcomes) == 3
    assert isinstance(writer.callback_error, BrokenPipeError)


def test_a_journal_read_again_after_it_grew_or_was_replaced_is_read_afresh(tmp_path: Path) -> None:
    """read_journal keeps the last journals read (faceoff.recent): a line appended since,
    or the file replaced by another of the same size, is seen, never the kept copy."""
    path = tmp_path / "journal.jsonl"
    first = outcomes(2)
    path.write_text("".join(o.model_dump_json() + "\n" for o in first))
    assert [o.index for o in read_journal(path).outcomes] == [0, 1]
    assert read_journal(path) is read_journal(path)  # unchanged: the kept reading
    with path.open("a") as handle:
        handle.write(first[0].model_copy(update={"index": 7}).model_dump_json() + "\n")
    assert [o.index for o in read_journal(path).outcomes] == [0, 1, 7]
    swapped = tmp_path / "swapped.jsonl"
    swapped.write_text(path.read_text().replace('"index":7', '"index":8'))
    swapped.replace(path)  # same size, a new inode: as an atomic rewrite leaves it
    assert [o.index for o in read_journal(path).outcomes] == [0, 1, 8]
