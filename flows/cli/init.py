"""``faceoff init``: a commented starting matrix from flags or, on a terminal, questions;
validated before it is written (an input that cannot make a valid matrix writes nothing),
then the next command to run."""

from __future__ import annotations

import os
import re
import sys
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import typer

from faceoff.errors import FaceoffError
from flows.cli.output_file import fresh_file
from matrix.freeze import freeze
from matrix.plan import plan
from matrix.toml.reader import MatrixError, load_matrix
from matrix.toml.schema import SCHEMA_FILE
from matrix.toml.starter import Answers, ArmAnswers, StarterError, starting_matrix

Ask = Callable[[str, str], str]  # question, default -> answer
ROLES = ("incumbent", "candidate")
MAX_CLIMB = 3  # folders up from the matrix to the schema before its path is given whole


@dataclass(frozen=True)
class InitFlags:
    """What ``faceoff init``'s flags say, each arm's by role."""

    images: dict[str, str | None]
    serves: dict[str, str | None]
    model: str | None = None
    gpus: str | None = None
    name: str | None = None

    @property
    def given(self) -> bool:
        return any(self.images.values()) or any(self.serves.values())


def init(output: Path, flags: InitFlags, *, replace: bool) -> None:
    fresh_file(output)
    if output.exists() and not replace:
        raise FaceoffError(
            "refusing to overwrite", where=str(output), fix="give --replace, or another path"
        )
    if not flags.given and not sys.stdin.isatty():
        raise FaceoffError(
            "nothing to start from, and no terminal to ask on",
            where="faceoff init",
            fix="give --incumbent-image and/or --incumbent-serve, the same for the candidate, "
            "and --gpus (faceoff init --help)",
        )
    answers = from_flags(output, flags) if flags.given else from_questions(output, typer.prompt)
    text = _valid(answers, output)
    output.write_text(text, encoding="utf-8")
    _said(output)


def from_flags(output: Path, flags: InitFlags) -> Answers:
    arms = tuple(
        ArmAnswers(
            role, role, image=flags.images[role], serve=flags.serves[role], model=flags.model
        )
        for role in ROLES
    )
    campaign = flags.name or _slug(output.stem)
    return Answers(campaign, _seed(campaign), (arms[0], arms[1]), gpu_ids(flags.gpus or ""))


def from_questions(output: Path, ask: Ask) -> Answers:
    """The same answers, asked one by one."""
    campaign = ask("Campaign name", _slug(output.stem))
    arms = []
    for role in ROLES:
        arm = ask(f"Name of the {role} arm", role)
        image = ask(f"{role}: image pinned by digest (repo@sha256:…), empty to run a process", "")
        serve = ask(
            f"{role}: its `vllm serve MODEL …` command line, empty if the image has none", ""
        )
        model = None if serve else ask(f"{role}: the model path the image serves", "/models/model")
        arms.append(ArmAnswers(arm, role, image=image or None, serve=serve or None, model=model))
    gpus = ask("GPU indices both arms use, comma-separated (empty: none)", "")
    return Answers(campaign, _seed(campaign), (arms[0], arms[1]), gpu_ids(gpus))


def gpu_ids(text: str) -> list[int]:
    words = [w.strip() for w in text.split(",") if w.strip()]
    if not all(w.isdigit() for w in words):
        raise FaceoffError(
            f"{text!r} is not a list of GPU indices", where="--gpus", fix="write e.g. --gpus 0,1"
        )
    return [int(w) for w in words]


def _valid(answers: Answers, output: Path) -> str:
    """The matrix text, once faceoff's own loader accepts it; else the loader's error."""
    try:
        text = starting_matrix(answers, schema_path=_schema_from(output.parent))
    except StarterError as exc:
        raise FaceoffError(str(exc), fix="correct that input and run faceoff init again") from exc
    with tempfile.TemporaryDirectory() as folder:
        trial = Path(folder) / output.name
        trial.write_text(text, encoding="utf-8")
        try:
            load_matrix(trial)
        except MatrixError as exc:  # names the field; the arms are named by their roles
            raise FaceoffError(
                exc.what,
                where=f"{output} (not written)",
                fix="correct the flag or answer that gives it and run faceoff init again",
            ) from exc
    return text


def _said(output: Path) -> None:
    matrix = load_matrix(output)
    the_plan = plan(matrix)
    typer.echo(
        f"{output}: campaign {matrix.campaign.name}, {len(the_plan.cell_runs)} cell runs on "
        f"{len(matrix.arms)} arms, matrix id {freeze(matrix).matrix_id[:12]}"
    )
    typer.echo("Read its comments and adjust it (docs/reference/matrix-fields.md), then:")
    typer.echo(f"  faceoff validate {output}    # the plan, where each arm listens, the worst case")
    typer.echo(f"  faceoff run {output}")


def _schema_from(folder: Path) -> str:
    """The shipped schema, as a path from the matrix's folder (editors read it)."""
    import evidence  # noqa: PLC0415  (where the schemas ship)

    schema = Path(next(iter(evidence.__path__))) / "schemas" / SCHEMA_FILE
    try:
        relative = os.path.relpath(schema, folder.resolve())
    except ValueError:  # another drive
        return str(schema)
    # beside the checkout, relative (it moves with it); from elsewhere, the whole path
    return relative if Path(relative).parts[:MAX_CLIMB].count("..") < MAX_CLIMB else str(schema)


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return slug[:63] or "campaign"


def _seed(campaign: str) -> int:
    """A seed of the campaign's own (its name's CRC-32): change it to draw other prompts."""
    return zlib.crc32(campaign.encode())
