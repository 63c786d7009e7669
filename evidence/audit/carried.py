"""The audit's check of a successor campaign's carried-over cells (``carried.json``).
The same concept at another layer: ``evidence.views.card.carried``, ``faceoff.formats.carried``.

Each file the successor copied must still hash as the source's ``SHA256SUMS`` listed it when
it was copied; the source bundle (where the record says it was, else beside this bundle)
must still list and hold each of those files with that hash; the source's frozen matrix
copied here must be the one named; and each carried cell's content key must be what both
frozen matrices give it (``matrix.cell_content``). A source bundle that cannot be found
leaves the copies checked against the record alone, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evidence.folder.layout import FROZEN_FILE, CampaignFolder
from evidence.folder.sums import read_sums
from faceoff.canonical import file_sha256
from faceoff.errors import FaceoffError
from faceoff.formats.carried import CARRIED_FILE, CarriedRecord, read_carried
from faceoff.formats.frozen_matrix import FrozenMatrix, read_frozen
from matrix.cell_content import cell_key

Problem = tuple[str, str, str]  # file, field, what is wrong


@dataclass
class CarriedCheck:
    record: CarriedRecord | None = None
    problems: list[Problem] = field(default_factory=list)
    source_found: bool = False
    frozen: dict[str, FrozenMatrix] = field(default_factory=dict)  # matrix id -> a copy here

    @property
    def files(self) -> int:
        return len(self.record.files) if self.record else 0


def check_carried(root: Path, frozen: FrozenMatrix) -> CarriedCheck:
    """Every problem of the bundle's carried-over cells; none for a campaign without any."""
    check = CarriedCheck()
    source = frozen.matrix.campaign.successor_of
    try:
        check.record = read_carried(root)
    except FaceoffError as exc:
        check.problems.append((CARRIED_FILE, "", exc.what))
        return check
    record = check.record
    if record is None:
        if source is not None:
            check.problems.append((CARRIED_FILE, "", f"missing; the matrix succeeds {source}"))
        return check
    if record.source != source:
        check.problems.append(
            (CARRIED_FILE, "source", f"says {record.source!r}, the matrix says {source!r}")
        )
    check.problems += _copies(root, record)
    source_frozen = _source_frozen(root, record, check)
    if source_frozen is not None:
        check.problems += _keys(record, frozen, source_frozen)
    source_root = _source_root(root, record)
    if source_root is not None:
        check.source_found = True
        check.problems += _against_source(source_root, record)
    return check


def _copies(root: Path, record: CarriedRecord) -> list[Problem]:
    problems = []
    for name, digest in record.files.items():
        path = root / name
        if not path.is_file():
            problems.append((name, "", f"missing; {CARRIED_FILE} lists it as carried over"))
        elif (actual := file_sha256(path)) != digest:
            problems.append((name, "", f"sha256 is {actual[:12]}…, carried over as {digest[:12]}…"))
    return problems


def _source_frozen(root: Path, record: CarriedRecord, check: CarriedCheck) -> FrozenMatrix | None:
    """The source's frozen matrix and those it carried cells under, by id."""
    try:
        found = read_frozen(root / record.source_frozen)
    except FaceoffError as exc:
        check.problems.append((record.source_frozen, "matrix_id", exc.what))
        return None
    if found.matrix_id != record.source_matrix_id:
        problem = f"is matrix {found.short_id}, {CARRIED_FILE} names {record.source_matrix_id[:12]}"
        check.problems.append((record.source_frozen, "matrix_id", problem))
    for path in sorted(Path(root / record.source_frozen).parents[1].glob(f"*/{FROZEN_FILE}")):
        try:
            other = read_frozen(path)
        except FaceoffError as exc:
            check.problems.append((path.relative_to(root).as_posix(), "matrix_id", exc.what))
            continue
        check.frozen[other.matrix_id] = other
    return found


def _keys(record: CarriedRecord, frozen: FrozenMatrix, source: FrozenMatrix) -> list[Problem]:
    problems = []
    for cell in record.cells:
        where = (CARRIED_FILE, f"cells[{cell.cell_id}].cell_key")
        try:
            keys = {
                "this": cell_key(frozen, cell.cell_id),
                "the source": cell_key(source, cell.cell_id),
            }
        except KeyError:
            problems.append((*where, "the cell is not in both frozen matrices"))
            continue
        problems += [
            (*where, f"{cell.cell_id}'s content hashes to {key[:12]} under {whose} matrix, "
                     f"not {cell.cell_key[:12]}: it changed")
            for whose, key in keys.items()
            if key != cell.cell_key
        ]  # fmt: skip
    return problems


def _source_root(root: Path, record: CarriedRecord) -> Path | None:
    """The source bundle where the record says it was, else beside this one."""
    for folder in (Path(record.source_bundle), Path(root).parent / record.source):
        if (folder / FROZEN_FILE).is_file():
            return folder
    return None


def _against_source(source_root: Path, record: CarriedRecord) -> list[Problem]:
    """Each carried file as the source bundle lists and holds it now."""
    folder = CampaignFolder(source_root)
    try:
        listed = read_sums(folder)
    except FaceoffError as exc:
        return [(CARRIED_FILE, "source_bundle", f"{source_root}: {exc.what}")]
    here_to_there = {record.source_frozen: FROZEN_FILE}
    problems = []
    for name, digest in record.files.items():
        there = here_to_there.get(name, name)
        path = source_root / there
        where = f"{CARRIED_FILE}: files[{name}]"
        if listed.get(there) != digest:
            problems.append(
                (
                    name,
                    "",
                    f"the source's SHA256SUMS no longer lists it as {digest[:12]}… ({where})",
                )
            )
        elif not path.is_file() or file_sha256(path) != digest:
            problems.append(
                (name, "", f"the source bundle's copy at {path} no longer hashes to {digest[:12]}…")
            )
    return problems
