"""``faceoff init``: a commented starting matrix from flags or, on a terminal, questions
(each answer checked as it is given, and asked again until it can be used); validated
before it is written (an input that cannot make a valid matrix writes nothing), then what
was read otherwise than written or left out, and the next command to run."""

from __future__ import annotations

import functools
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
from faceoff.formats.frozen_matrix import freeze
from flows.cli.output_file import fresh_file
from matrix.arm import DIGEST_REF
from matrix.campaign_plan import plan
from matrix.toml.reader import MatrixError, load_matrix
from matrix.toml.schema import SCHEMA_FILE
from matrix.toml.serve_line import StarterError, read_serve_line
from matrix.toml.starter import Answers, ArmAnswers, read_answers, starting_matrix

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
    _said(output, read_answers(answers).notes)


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
    """The same answers, asked one by one, each checked as it is given."""
    campaign = _checked(ask, "Campaign name", _slug(output.stem), _a_name)
    arms = []
    for role in ROLES:
        arm = _checked(ask, f"Name of the {role} arm", role, _a_name)
        image = _checked(
            ask, f"{role}: image pinned by digest (repo@sha256:…), empty to run a process", "",
            _pinned,
        )  # fmt: skip
        serve = _checked(
            ask,
            f"{role}: its `vllm serve MODEL …` command line, empty if the image has none",
            "",
            functools.partial(_a_serve_line, role=role, image=image),
        )
        model = (
            None
            if serve
            else _checked(ask, f"{role}: the model path the image serves", "/models/model", _any)
        )
        arms.append(ArmAnswers(arm, role, image=image or None, serve=serve or None, model=model))
    pair = (arms[0], arms[1])
    gpus = _checked(
        ask,
        "GPU indices both arms use, comma-separated (empty: none)",
        "",
        lambda text: read_answers(Answers(campaign, 0, pair, gpu_ids(text))),  # enough GPUs
    )
    return Answers(campaign, _seed(campaign), pair, gpu_ids(gpus))


def _checked(ask: Ask, question: str, default: str, check: Callable[[str], object]) -> str:
    """An answer ``check`` accepts; a refused one is said and the question asked again."""
    while True:
        answer = ask(question, default).strip()
        try:
            check(answer)
        except (FaceoffError, StarterError, ValueError) as exc:
            typer.echo(f"  {getattr(exc, 'message', exc)}", err=True)
            continue
        return answer


def _a_name(text: str) -> None:
    if _slug(text) != text:
        raise ValueError(f"{text!r}: a name is lower case letters, digits, '.', '_' and '-'")


def _pinned(text: str) -> None:
    if text and not DIGEST_REF.match(text):
        raise ValueError(
            f"{text!r} is not pinned by digest; write repo@sha256:<64 hex> (`docker inspect "
            "--format '{{index .RepoDigests 0}}' IMAGE`), or leave it empty for a process"
        )


def _a_serve_line(text: str, *, role: str, image: str) -> None:
    if text:
        read_serve_line(text, f"{role}'s serve line")
    elif not image:
        raise ValueError("an arm without an image needs its `vllm serve MODEL …` line")


def _any(text: str) -> None:
    if not text:
        raise ValueError("give the model path, as the image's `vllm serve` takes it")


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


def _said(output: Path, notes: list[str]) -> None:
    matrix = load_matrix(output)
    the_plan = plan(matrix)
    typer.echo(
        f"{output}: campaign {matrix.campaign.name}, {len(the_plan.cell_runs)} cell runs on "
        f"{len(matrix.arms)} arms, matrix id {freeze(matrix).matrix_id[:12]}"
    )
    for note in notes:  # also comments at the top of the file
        typer.echo(f"note: {note}")
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
