"""Reading a matrix TOML: grid expansion, defaults, and errors that name the field.

A ``[[cells]]`` entry with lists for ``input_tokens`` and ``concurrency`` expands into one
cell per combination, ``[defaults]`` supplies the cell fields an entry does not set, and
``replicates = K`` makes K cells ``<id>-r1`` … ``<id>-rK`` sharing one prompt vector
(``"auto"`` with ``max_passes``: a sequential cell, its later passes run while undecided). Every
way a file can be wrong ends in one ``MatrixError`` naming the file and the field. Checks
that need the host (resolving arm hosts, finding bundled simulator profiles) run here,
after the pure model validation. Ids, limits and checks: docs/matrix.md, "Format" and
"Checks and limits".
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import os
import re
import socket
import stat
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from faceoff.errors import FaceoffError
from matrix.arm import Arm
from matrix.engines import WILDCARD_HOSTS
from matrix.model import Matrix
from matrix.search import search_defaults
from matrix.toml.errors import Origin, describe
from matrix.toml.source_entry import fidelity_entries, source_entry

GRID_FIELDS = ("input_tokens", "concurrency")
TEMPLATE_FIELDS = ("kind", *GRID_FIELDS)
MAX_FILE_BYTES = 4 * 1024 * 1024  # matrices are a few KiB; more is the wrong file
MAX_PROTECTED_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 16  # tables and arrays within each other; the deepest field is five levels down
MAX_CELLS = 1000  # after grid expansion
MAX_REPLICATES = 20  # beyond this, the between-replicate interval no longer narrows usefully
# C0 controls and DEL, except tab, newline and carriage return (multi-line notes).
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
FIX_FIELDS = "Correct the field(s) named above and run `faceoff validate` again"


class MatrixError(FaceoffError):
    """A matrix file that cannot be used, with the file and field named."""


def load_matrix(path: Path) -> Matrix:
    path = Path(path)
    raw = _read_toml(path)
    try:
        check_values(raw)
        data, origins = expand(raw, base=path.parent)
    except ValueError as exc:
        raise MatrixError(str(exc), where=str(path), fix=FIX_FIELDS) from exc
    try:
        matrix = strictly(data)
    except ValidationError as exc:
        raise MatrixError(describe(exc, data, origins), where=str(path), fix=FIX_FIELDS) from exc
    try:
        check_host(matrix)
    except ValueError as exc:
        raise MatrixError(str(exc), where=str(path), fix=FIX_FIELDS) from exc
    return matrix


def strictly(data: dict[str, Any]) -> Matrix:
    """The matrix of ``data``, validated as JSON in pydantic's strict mode: a number is never
    a boolean or a string (``port = true`` is not port 1, ``port = "8000"`` not 8000), an
    integer never a fraction, while strings still name enum members and datetimes."""
    text = json.dumps(data, default=lambda v: v.isoformat())  # TOML's dates and times
    return Matrix.model_validate_json(text, strict=True)


def _read_toml(path: Path) -> dict[str, Any]:
    text = _decode(path, _read_bytes(path))
    try:
        return tomllib.loads(text)
    except RecursionError as exc:  # the parser recurses once per level of nesting
        raise MatrixError(
            f"is nested deeper than a matrix can be (more than {MAX_DEPTH} levels)",
            where=str(path),
            fix=FIX_FIELDS,
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise MatrixError(
            f"malformed TOML: {exc}",
            where=str(path),
            fix="Fix the syntax at that line (strings need quotes, tables need [brackets])",
        ) from exc


def _read_bytes(path: Path) -> bytes:
    fix = "pass the path of a matrix TOML file"
    if path.is_dir():
        raise MatrixError("is a folder, not a matrix file", where=str(path), fix=fix)
    try:
        # O_NONBLOCK: opening a FIFO would otherwise wait for a writer that never comes
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError as exc:
        raise MatrixError("matrix file not found", where=str(path), fix="check the path") from exc
    except OSError as exc:
        raise MatrixError(f"cannot read: {exc.strerror}", where=str(path), fix=fix) from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device never ends
        os.close(fd)
        raise MatrixError("is not a regular file", where=str(path), fix=fix)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise MatrixError(
            f"is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB, far more than any matrix",
            where=str(path),
            fix=fix,
        )
    return data


def _decode(path: Path, data: bytes) -> str:
    fix = "save the file as UTF-8 (TOML files are UTF-8)"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise MatrixError("is UTF-16, not UTF-8", where=str(path), fix=fix)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise MatrixError(
            f"contains a NUL byte at offset {nul} (UTF-16 or a binary file?)",
            where=str(path),
            fix=fix,
        )
    try:
        return data.decode("utf-8-sig")  # a leading BOM, as some editors write, is harmless
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise MatrixError(
            f"is not UTF-8: byte 0x{data[exc.start]:02x} on line {line}", where=str(path), fix=fix
        ) from exc


def check_values(value: Any, where: str = "", depth: int = 0) -> None:
    """Refuse values no lane or artifact can carry, naming where they are in the file."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{where}: nested more than {MAX_DEPTH} levels deep; no field is")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: {value} is not a finite number; give a finite value")
    if isinstance(value, str):
        bad = CONTROL.search(value)
        if bad:
            raise ValueError(
                f"{where}: contains the control character U+{ord(bad.group()):04X}; remove it"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            check_values(key, path, depth + 1)
            check_values(item, path, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_values(item, f"{where}[{index}]", depth + 1)


def expand(raw: dict[str, Any], *, base: Path | None = None) -> tuple[dict[str, Any], list[Origin]]:
    """Apply ``[defaults]`` and expand cell grids; returns the data and each cell's origin.
    ``base``: the matrix file's folder, against which a cell's dataset or trace file resolves."""
    data = {k: v for k, v in raw.items() if k != "defaults"}
    defaults = raw.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ValueError("defaults: must be a table ([defaults] with cell fields)")
    entries = raw.get("cells", [])
    if not isinstance(entries, list):
        raise ValueError("cells: must be an array of tables, one [[cells]] entry per cell group")
    cells: list[dict[str, Any]] = []
    origins: list[Origin] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            cells.append(entry)
            origins.append(Origin(index, None, 1, written_id=False))
            continue
        own = source_entry(search_defaults(entry), base, f"cells[{index}]")
        filled = _deep_defaults(defaults, own)
        expanded = _expand_entry(filled, f"cells[{index}]")
        cells += expanded
        origins += [Origin(index, c["id"], len(expanded), "id" in entry) for c in expanded]
        if len(cells) > MAX_CELLS:
            raise ValueError(
                f"cells[{index}]: the grids expand to more than {MAX_CELLS} cells; "
                "split the campaign or give shorter input_tokens/concurrency lists"
            )
    data["cells"] = cells
    if "fidelity" in raw:
        data["fidelity"] = fidelity_entries(raw["fidelity"], base)
    return data, origins


def _deep_defaults(defaults: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    merged = dict(defaults)
    for key, value in entry.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _expand_entry(entry: dict[str, Any], label: str) -> list[dict[str, Any]]:
    names = [name for name in GRID_FIELDS if name in entry]
    axes = [_as_list(entry[name]) for name in names]
    for name, axis in zip(names, axes, strict=True):
        if not axis:
            raise ValueError(
                f"{label}.{name}: an empty list expands to no cells; give at least one value"
            )
    if any(len(axis) > MAX_CELLS for axis in axes):  # before the product is built
        raise ValueError(f"{label}: a grid list longer than {MAX_CELLS} values; shorten it")
    template = entry.get("id")
    if template is not None and not isinstance(template, str):
        raise ValueError(f"{label}.id: must be a string, got {template!r}")
    is_grid = any(len(axis) > 1 for axis in axes)
    count, sequential = _replicates(entry, label)
    cells = []
    for combo in itertools.product(*axes):
        cell = {k: v for k, v in entry.items() if k not in ("replicates", "max_passes")}
        cell |= dict(zip(names, combo, strict=True))
        cell["id"] = _cell_id(cell, template, is_grid, label)
        cells += _replicated(cell, count, sequential=sequential)
    return cells


def _replicates(entry: dict[str, Any], label: str) -> tuple[int, bool]:
    """(K, sequential): ``replicates = K``, or ``"auto"`` with ``max_passes = K`` (a
    sequential cell: as many of its K passes as its rule's criteria need)."""
    count = entry.get("replicates", 1)
    passes = entry.get("max_passes")
    if count == "auto":
        if (
            isinstance(passes, bool)
            or not isinstance(passes, int)
            or not 2 <= passes <= MAX_REPLICATES
        ):
            raise ValueError(
                f'{label}.max_passes: replicates = "auto" needs max_passes, a whole number '
                f"from 2 to {MAX_REPLICATES} (the most passes a sequential cell may run), got "
                f"{passes!r}"
            )
        return passes, True
    if passes is not None:
        raise ValueError(f'{label}.max_passes: only with replicates = "auto"; drop it or set that')
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_REPLICATES:
        raise ValueError(
            f"{label}.replicates: must be a whole number from 1 to {MAX_REPLICATES}, or "
            f'"auto" with max_passes; got {count!r}'
        )
    return count, False


def _replicated(cell: dict[str, Any], count: int, *, sequential: bool) -> list[dict[str, Any]]:
    """A cell run ``count`` times in separate windows: one cell per replicate, ids ``-r<k>``."""
    if count == 1:
        return [cell]
    base = cell["id"]
    replicate: dict[str, Any] = {"of": base, "count": count}
    if sequential:
        replicate["sequential"] = True
    return [
        {**cell, "id": f"{base}-r{k}", "replicate": replicate | {"index": k}}
        for k in range(1, count + 1)
    ]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _cell_id(cell: dict[str, Any], template: str | None, is_grid: bool, label: str) -> str:
    if template is not None and "{" in template:
        try:
            return template.format_map({k: cell.get(k) for k in TEMPLATE_FIELDS})
        except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
            raise ValueError(
                f"{label}.id: template {template!r} cannot be filled ({exc}); "
                f"use only {{{'}, {'.join(TEMPLATE_FIELDS)}}} and close every brace"
            ) from None
    if template is not None and not is_grid:
        return template
    kind = str(cell.get("kind", "cell")).replace("_", "-")
    base = f"{kind}-{cell.get('input_tokens')}-{_load_label(cell)}"
    return f"{template}-{base}" if template else base


def _load_label(cell: dict[str, Any]) -> str:
    """``c<concurrency>`` for a closed loop; the arrival and its rate (or ``sweep``) else."""
    arrival = cell.get("arrival", "closed")
    if arrival == "closed":
        return f"c{cell.get('concurrency')}"
    if "sweep" in cell or "ramp" in cell:
        return f"{arrival}-{'sweep' if 'sweep' in cell else 'ramp'}"
    rate = cell.get("rate")
    return f"{arrival}-{rate:g}rps" if isinstance(rate, int | float) else str(arrival)


def check_host(matrix: Matrix) -> None:
    """The checks that need this host: arm addresses as resolved, bundled simulator profiles."""
    _distinct_listeners(matrix.arms)
    for index, arm in enumerate(matrix.arms):
        _known_profile(arm, f"arms[{index}] (name={arm.name!r})")
    for index, name in enumerate(matrix.protected_files):
        _hashable(Path(name), f"protected_files[{index}]")


def _hashable(path: Path, label: str) -> None:
    """A protected file is hashed before and after the campaign: a device or FIFO would never
    end, and a huge file is not an operator's configuration. An absent one is recorded so."""
    try:
        found = path.stat()
    except OSError:
        return
    if not stat.S_ISREG(found.st_mode):
        raise ValueError(
            f"{label}: {str(path)!r} is not a regular file (a device, FIFO or folder has no "
            "content to hash); list the operator's files themselves"
        )
    if found.st_size > MAX_PROTECTED_BYTES:
        raise ValueError(
            f"{label}: {str(path)!r} is {found.st_size // 2**20} MiB; protected files are "
            f"configuration, at most {MAX_PROTECTED_BYTES // 2**20} MiB each"
        )


def _distinct_listeners(arms: list[Arm]) -> None:
    """Two arms must not listen on the same address and port (names resolved, 0.0.0.0 is all)."""
    addresses = {arm.name: _addresses(arm.host) for arm in arms}
    for index, arm in enumerate(arms):
        for other in arms[:index]:
            if other.port != arm.port:
                continue
            mine, theirs = addresses[arm.name], addresses[other.name]
            if mine & theirs or (mine | theirs) & set(WILDCARD_HOSTS):  # 0.0.0.0 is every address
                raise ValueError(
                    f"arms[{index}] (name={arm.name!r}).port: arms {other.name!r} "
                    f"({other.host}:{other.port}) and {arm.name!r} ({arm.host}:{arm.port}) would "
                    "listen on the same address; give each arm its own port"
                )


def _addresses(host: str) -> frozenset[str]:
    if host in WILDCARD_HOSTS:
        return frozenset({host})
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):  # unresolvable here; compare the name as written
        return frozenset({host.lower()})
    return frozenset(str(info[4][0]) for info in infos)


def _known_profile(arm: Arm, label: str) -> None:
    """A bundled profile name must exist; a ``.toml`` path is the lane's (maybe a container's)."""
    if arm.simulator is None or arm.simulator.profile.endswith(".toml"):
        return
    # the simulator's bundled profiles are package data; the simulator itself is not imported
    spec = importlib.util.find_spec("simulator")
    if spec is None or not spec.submodule_search_locations:
        return
    folder = Path(next(iter(spec.submodule_search_locations))) / "profiles"
    known = sorted(p.stem for p in folder.glob("*.toml"))
    if arm.simulator.profile not in known:
        raise ValueError(
            f"{label}.simulator.profile: no bundled profile "
            f"{arm.simulator.profile!r}; known: {', '.join(known)} (or give a path to a .toml)"
        )
