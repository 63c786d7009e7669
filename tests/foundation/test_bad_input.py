"""Bad input never crashes: every malformed matrix and every bad command line gets a short
error naming the file, field and fix, exit 2, no traceback, and nothing written.

The matrix cases run ``faceoff validate FILE`` in-process through ``flows.cli.app.main``, the
function the ``faceoff`` script calls; a handful run the real CLI in a subprocess.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from flows.cli.app import main
from matrix.arm import SIMULATOR_FAULTS
from matrix.model import Matrix
from matrix.toml.reader import MatrixError, load_matrix
from tests.foundation.cli import faceoff
from tests.foundation.test_matrix import DIGEST, MINIMAL

MAX_ERROR_LINES = 2


@dataclasses.dataclass(frozen=True)
class Case:
    """A matrix file (text, bytes, or a maker) and what its error must name."""

    id: str
    content: str | bytes | Callable[[Path], Path]
    expect: tuple[str, ...]


def edit(old: str, new: str, count: int = 1) -> str:
    assert old in MINIMAL, old
    return MINIMAL.replace(old, new, count)


FIRST_ARM_END = 'port = 9001\nserved_model = "m"\n'


def first_arm(extra: str) -> str:
    """MINIMAL with TOML added to the incumbent arm (a sub-table comes last in it)."""
    return edit(FIRST_ARM_END, FIRST_ARM_END + extra)


def cell_field(line: str) -> str:
    return edit("requests = 2\n", f"requests = 2\n{line}\n")


def a_folder(tmp: Path) -> Path:
    folder = tmp / "matrix.toml"
    folder.mkdir()
    return folder


def a_fifo(tmp: Path) -> Path:
    fifo = tmp / "matrix.toml"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    return fifo


def missing(tmp: Path) -> Path:
    return tmp / "nope.toml"


LATIN1 = MINIMAL.replace("seed = 7", 'seed = 7\ndescription = "café"').encode("latin-1")
TEMPLATE_HINT = "use only {kind}, {input_tokens}, {concurrency}"

CASES = [
    # the file itself
    Case("syntax-error", edit("seed = 7", "seed = "), ("malformed TOML", "line")),
    Case("unclosed-string", edit('name = "tiny"', 'name = "tiny'), ("malformed TOML",)),
    Case("missing-file", missing, ("matrix file not found",)),
    Case("a-folder", a_folder, ("is a folder",)),
    Case("latin-1", LATIN1, ("is not UTF-8", "byte 0xe9", "Save the file as UTF-8")),
    Case("utf-16-bom", MINIMAL.encode("utf-16"), ("is UTF-16",)),
    Case("utf-16-no-bom", MINIMAL.encode("utf-16-le"), ("NUL byte",)),
    Case("nul-byte", MINIMAL.encode() + b"\x00", ("NUL byte",)),
    Case("empty-file", "", ("campaign: Field required", "arms: Field required")),
    Case(
        "escaped-nul",
        edit('served_model = "m"', 'served_model = "m\\u0000"'),
        ("arms[0].served_model", "U+0000"),
    ),
    Case(
        "escaped-escape",
        edit("port = 9001", 'port = 9001\nhost = "a\\u001b"'),
        ("arms[0].host", "U+001B"),
    ),
    # shapes
    Case("defaults-not-a-table", "defaults = 5\n" + MINIMAL, ("defaults: must be a table",)),
    Case(
        "cells-not-an-array",
        MINIMAL.split("[[cells]]")[0].replace("[campaign]", "cells = 5\n[campaign]"),
        ("cells: must be an array",),
    ),
    Case(
        "arms-of-numbers",
        MINIMAL.split("[[arms]]")[0].replace("[campaign]", "arms = [1, 2]\n[campaign]")
        + MINIMAL.split("port = 9002")[1].split('served_model = "m"', 1)[1],
        ("arms[0]", "should be a table"),
    ),
    Case("campaign-a-string", 'campaign = "x"\n' + MINIMAL.split("\n", 4)[4], ("campaign",)),
    Case("no-cells", MINIMAL.split("[[cells]]")[0], ("cells", "at least 1")),
    Case(
        "one-arm",
        MINIMAL.split('[[arms]]\nname = "new"')[0] + "[[cells]]" + MINIMAL.split("[[cells]]")[1],
        ("arms", "at least 2"),
    ),
    # unknown fields and wrong types
    Case(
        "unknown-campaign-field",
        edit("seed = 7", "seed = 7\nnmae = 'x'"),
        ("campaign.nmae", "unknown field (did you mean 'name'?)"),
    ),
    Case(
        "unknown-arm-field",
        edit("port = 9001", "port = 9001\nprot = 1"),
        ("arms[0] (name='old').prot", "'port'"),
    ),
    Case("unknown-cell-field", cell_field("reqeusts = 3"), ("(id='natural-1024-c1').reqeusts",)),
    Case("port-not-a-number", edit("port = 9001", 'port = "9001x"'), ("(name='old').port",)),
    Case("port-out-of-range", edit("port = 9001", "port = 70000"), ("(name='old').port",)),
    Case("seed-a-word", edit("seed = 7", 'seed = "seven"'), ("campaign.seed",)),
    Case("requests-fractional", edit("requests = 2", "requests = 2.5"), (".requests",)),
    Case("requests-a-boolean", edit("requests = 2", "requests = true"), (".requests", "integer")),
    Case("port-a-boolean", edit("port = 9001", "port = true"), ("(name='old').port", "integer")),
    Case("port-a-string", edit("port = 9001", 'port = "9001"'), ("(name='old').port", "integer")),
    Case("top-p-a-boolean", cell_field("sampling = { top_p = true }"), (".sampling.top_p",)),
    Case("nested-600-deep", "a = " + "[" * 600 + "]" * 600 + "\n", ("nested deeper",)),
    Case("nested-20-deep", MINIMAL + "x = " + "[" * 20 + "]" * 20 + "\n", ("x[0][0]", "levels")),
    Case("a-fifo", a_fifo, ("is not a regular file",)),
    Case(
        "protected-device",
        edit("[campaign]", 'protected_files = ["/dev/zero"]\n\n[campaign]'),
        ("protected_files[0]", "'/dev/zero' is not a regular file"),
    ),
    Case("kind-unknown", edit('kind = "natural"', 'kind = "chatty"'), (".kind", "'natural'")),
    Case(
        "stop-policy-unknown",
        edit("seed = 7", "seed = 7\nstop_policy = 'panic'"),
        ("campaign.stop_policy",),
    ),
    Case(
        "client-receive-unknown",
        edit("seed = 7", "seed = 7\nclient_receive = 'busy'"),
        ("campaign.client_receive", "'sleep' or 'spin'"),
    ),
    Case("top-p-above-one", cell_field("sampling = { top_p = 2.0 }"), (".sampling.top_p",)),
    Case(
        "weights-hash-not-hex",
        edit("port = 9001", "port = 9001\nexpected_weights_sha256 = 'x'"),
        ("expected_weights_sha256",),
    ),
    # identity
    Case(
        "tag-not-digest", edit("@" + DIGEST, ":latest"), ("(name='old').image", "pinned by digest")
    ),
    Case("short-digest", edit(DIGEST, "sha256:abc"), ("(name='old').image", "pinned by digest")),
    Case("inline-secret", first_arm('env = { HF_TOKEN = "hf_x" }'), ("looks like a secret",)),
    Case(
        "secret-engine-arg",
        first_arm('engine_args = ["--api-key", "sk-planted"]'),
        ("engine_args of arm 'old'", "(--api-key)", "[arms.secrets]"),
    ),
    Case(
        "secret-flag-in-command",
        first_arm('command = ["vllm", "serve", "m", "--hf-token=hf_planted"]'),
        ("command of arm 'old'", "(--hf-token)", "VLLM_API_KEY, HF_TOKEN"),
    ),
    Case(
        "secret-in-a-shell-string",
        first_arm('command = ["sh", "-c", "vllm serve /m --api-key sk-LEAK-123"]'),
        ("command of arm 'old'", "(--api-key)", "[arms.secrets]"),
    ),
    Case("secret-key-flag", first_arm('engine_args = ["--key", "abc"]'), ("(--key)",)),
    Case(
        "env-openai-key",
        first_arm('env = { OPENAI_KEY = "x" }'),
        ("'OPENAI_KEY'", "[arms.secrets]"),
    ),
    Case("env-authorization", first_arm('env = { AUTHORIZATION = "x" }'), ("looks like a secret",)),
    Case(
        "env-value-bearer",
        first_arm('env = { EXTRA_HEADER = "Bearer abc" }'),
        ("'EXTRA_HEADER' looks like a secret",),
    ),
    Case("duplicate-arm-names", edit('name = "new"', 'name = "old"'), ("duplicate arm name",)),
    Case("two-incumbents", edit('role = "candidate"', 'role = "incumbent"'), ("exactly one arm",)),
    Case(
        "duplicate-port",
        edit("port = 9002", "port = 9001"),
        ("arms[1] (name='new').port: arms 'old' and 'new' both listen on 127.0.0.1:9001",),
    ),
    Case(
        "localhost-vs-loopback",
        edit("port = 9002", 'port = 9001\nhost = "localhost"'),
        ("'old' (127.0.0.1:9001)", "'new' (localhost:9001)", "same address"),
    ),
    Case(
        "wildcard-vs-loopback",
        edit("port = 9002", 'port = 9001\nhost = "0.0.0.0"'),
        ("same address",),
    ),
    Case("ipv6-wildcard", edit("port = 9002", 'port = 9001\nhost = "::"'), ("same address",)),
    Case(
        "name-traversal",
        edit('name = "tiny"', 'name = "../x"'),
        ("campaign.name", "'../x' is not a name faceoff can use"),
    ),
    Case(
        "name-slash",
        edit('name = "tiny"', 'name = "a/b"'),
        ("campaign.name", "names become folder names"),
    ),
    Case("name-empty", edit('name = "tiny"', 'name = ""'), ("campaign.name",)),
    Case("arm-name-uppercase", edit('name = "old"', 'name = "Old"'), ("arms[0]", ".name")),
    # cell ids and grids
    Case("template-unknown-field", cell_field('id = "{foo}"'), ("cells[0].id", TEMPLATE_HINT)),
    Case("template-unclosed", cell_field('id = "{input_tokens"'), ("cells[0].id", TEMPLATE_HINT)),
    Case("template-positional", cell_field('id = "c{0}"'), ("cells[0].id", TEMPLATE_HINT)),
    Case("id-a-number", cell_field("id = 5"), ("cells[0].id: must be a string",)),
    Case(
        "empty-concurrency",
        edit("concurrency = 1", "concurrency = []"),
        ("cells[0].concurrency: an empty list",),
    ),
    Case(
        "empty-input-grid",
        edit("input_tokens = 1024", "input_tokens = []"),
        ("cells[0].input_tokens: an empty list",),
    ),
    Case(
        "grid-explosion",
        edit("input_tokens = 1024", f"input_tokens = {list(range(1, 41))}").replace(
            "concurrency = 1", f"concurrency = {list(range(1, 41))}"
        ),
        ("more than 1000 cells",),
    ),
    Case("no-arm-runs-it", cell_field("arms = []"), (".arms", "at least 1 item")),
    Case("unknown-cell-arm", cell_field('arms = ["nobody"]'), ("unknown arms ['nobody']",)),
    # values out of range or absurd
    Case("deadline-infinite", cell_field("deadline_s = inf"), ("cells[0].deadline_s", "finite")),
    Case("deadline-nan", cell_field("deadline_s = nan"), ("cells[0].deadline_s", "finite")),
    Case("deadline-huge", cell_field("deadline_s = 1e308"), (".deadline_s", "604800")),
    Case(
        "threshold-infinite",
        MINIMAL + "\n[thresholds]\nengine_period_s = -inf\n",
        ("thresholds.engine_period_s", "finite"),
    ),
    Case(
        "requests-absurd",
        edit("requests = 2", "requests = 1_000_000_000_000"),
        (".requests", "100000"),
    ),
    Case("cell-warmups-absurd", cell_field("warmups = 100_000_000_000"), (".warmups", "10000")),
    Case(
        "arm-warmups-absurd",
        edit("port = 9001", "port = 9001\nwarmups = 100_000_000_000"),
        ("(name='old').warmups",),
    ),
    Case(
        "sampling-period-tiny",
        MINIMAL + "\n[thresholds]\nengine_period_s = 1e-9\n",
        ("thresholds.engine_period_s", "0.01"),
    ),
    Case("gpu-negative", first_arm("gpu_ids = [-1]"), ("(name='old').gpu_ids[0]",)),
    Case("input-zero", edit("input_tokens = 1024", "input_tokens = 0"), (".input_tokens",)),
    Case("concurrency-zero", edit("concurrency = 1", "concurrency = 0"), (".concurrency",)),
    Case(
        "concurrency-over-requests",
        edit("concurrency = 1", "concurrency = 3"),
        ("exceeds requests",),
    ),
    Case(
        "controlled-without-contract",
        edit('kind = "natural"', 'kind = "controlled"'),
        ("output_words",),
    ),
    Case(
        "input-beyond-context",
        first_arm("[arms.recipe]\nmax_model_len = 1024\n"),
        ("'natural-1024-c1'", "recipe.max_model_len = 1024"),
    ),
    Case(
        "output-beyond-context",
        first_arm("[arms.recipe]\nmax_model_len = 2048\n"),
        ("input_tokens = 1024 plus max_tokens = 16384", "recipe.max_model_len = 2048"),
    ),
    Case(
        "host-with-scheme",
        edit("port = 9001", 'port = 9001\nhost = "http://127.0.0.1"'),
        ("(name='old').host", "the port goes in port"),
    ),
    Case(
        "host-with-port",
        edit("port = 9001", 'port = 9001\nhost = "127.0.0.1:9001"'),
        ("(name='old').host",),
    ),
    Case(
        "host-with-space",
        edit("port = 9001", 'port = 9001\nhost = "local host"'),
        ("(name='old').host",),
    ),
    # the simulator
    Case(
        "unknown-simulator-field",
        first_arm('[arms.simulator]\nprofile = "tiny"\nspeed = 2\n'),
        ("simulator.speed: unknown field; known: faults, legacy_names, profile, time_scale",),
    ),
    Case(
        "unknown-profile",
        first_arm('[arms.simulator]\nprofile = "nope"\n'),
        ("arms[0] (name='old').simulator.profile", "tiny"),
    ),
    Case(
        "unknown-fault",
        first_arm('[arms.simulator]\nprofile = "tiny"\nfaults = { crash = 1 }\n'),
        ("unknown simulator fault(s) ['crash']", "crash_after_requests"),
    ),
    Case(
        "unknown-family",
        MINIMAL + '\n[families.not_applicable]\ngpu_mem = "no"\n',
        ("unknown metric family 'gpu_mem'",),
    ),
    Case(
        "context-flag-disagrees-with-recipe",
        first_arm(
            'engine_args = ["--max-model-len", "65536"]\n[arms.recipe]\nmax_model_len = 131072\n'
        ),
        ("--max-model-len 65536", "recipe.max_model_len = 131072", "drop recipe.max_model_len"),
    ),
    Case(
        "cell-beyond-the-context-flag",
        first_arm('engine_args = ["--max-model-len=2k"]\n'),
        ("input_tokens = 1024 plus max_tokens = 16384", "--max-model-len 2000 in its engine flags"),
    ),
    Case(
        "context-flag-not-a-number",
        first_arm('engine_args = ["--max-model-len", "lots"]\n'),
        ("--max-model-len 'lots' is not a token count",),
    ),
    Case("port-as-a-string", edit("port = 9001", 'port = "9001"'), ("(name='old').port",)),
    Case(
        "pilot-not-a-mode",
        edit("seed = 7", 'seed = 7\npilot = "yes"'),
        ("campaign.pilot",),
    ),
]


def materialize(case: Case, tmp: Path) -> Path:
    if callable(case.content):
        return case.content(tmp)
    path = tmp / "matrix.toml"
    if isinstance(case.content, bytes):
        path.write_bytes(case.content)
    else:
        path.write_text(case.content, encoding="utf-8")
    return path


def run_main(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    """``faceoff ARGS`` through the CLI's entry function; its exit status, stdout and stderr."""
    monkeypatch.setattr(sys, "argv", ["faceoff", *args])
    monkeypatch.delenv("FACEOFF_DB_URL", raising=False)
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    else:
        code = 0
    out, err = capsys.readouterr()
    return code, out, err


def files_under(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


def assert_short_error(code: int, err: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    assert err.startswith("error: "), err
    assert len(err.strip().splitlines()) <= MAX_ERROR_LINES, err


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_bad_matrix_is_one_short_error(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    path = materialize(case, tmp_path)
    monkeypatch.chdir(tmp_path)
    before = files_under(tmp_path)
    code, out, err = run_main(["validate", str(path)], monkeypatch, capsys)
    assert_short_error(code, err)
    assert str(path) in err
    for expected in case.expect:
        assert expected in err, f"{expected!r} not in {err!r}"
    assert out == ""
    assert files_under(tmp_path) == before


FILE_CASES = frozenset(  # the file itself is wrong: there is no field to name
    {"syntax-error", "unclosed-string", "missing-file", "a-folder", "latin-1", "utf-16-bom",
     "utf-16-no-bom", "nul-byte", "nested-600-deep", "a-fifo"}
)  # fmt: skip
TABLES = ("defaults", *Matrix.model_fields)


@pytest.mark.parametrize("case", [c for c in CASES if c.id not in FILE_CASES], ids=lambda c: c.id)
def test_every_message_starts_with_the_field_the_user_wrote(case: Case, tmp_path: Path) -> None:
    path = materialize(case, tmp_path)
    with pytest.raises(MatrixError) as caught:
        load_matrix(path)
    first = caught.value.what.split("; ")[0]
    assert re.match(rf"({'|'.join(TABLES)})\b[^:]*: ", first), first


GRID = edit("input_tokens = 1024", "input_tokens = [1024, 2048]")
LEADS = {
    # a misspelt grid field: the typo first, said once, no id made of the missing value
    "concurency": (
        GRID.replace("concurrency = 1", "concurency = 1"),
        "cells[0].concurency: unknown field (did you mean 'concurrency'?); "
        "cells[0].concurrency: Field required",
    ),
    # a wrong value of a grid entry: said once for the entry, not once per cell
    "requests-of-a-grid": (
        GRID.replace("requests = 2", "requests = 16.5"),
        "cells[0].requests: Input should be a valid integer, got a number with a fractional part",
    ),
    "port-clash": (
        edit("port = 9002", "port = 9001"),
        "arms[1] (name='new').port: arms 'old' and 'new' both listen on 127.0.0.1:9001",
    ),
    "unknown-cell-arm": (
        cell_field('arms = ["nobody"]'),
        "cells[0] (id='natural-1024-c1').arms: names unknown arms ['nobody']",
    ),
    "second-incumbent": (
        edit('role = "candidate"', 'role = "incumbent"'),
        "arms[1] (name='new').role: a second incumbent",
    ),
    "docker-lane-without-image": (
        edit(f'image = "127.0.0.1:5000/faceoff/sim@{DIGEST}"\n', "", 1),
        "arms[0] (name='old').image: a docker lane needs image",
    ),
    "controlled-without-contract": (
        edit('kind = "natural"', 'kind = "controlled"'),
        "cells[0] (id='controlled-1024-c1').output_words: a controlled cell needs output_words",
    ),
    "variant-of-a-field-that-cannot-vary": (
        cell_field('variants = { temperature = { new = "0.1" } }'),
        "cells[0] (id='natural-1024-c1').variants.temperature: cannot vary by arm",
    ),
}


@pytest.mark.parametrize("name", sorted(LEADS))
def test_a_message_leads_with_the_field_and_says_it_once(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    text, lead = LEADS[name]
    path = tmp_path / "matrix.toml"
    path.write_text(text)
    code, _, err = run_main(["validate", str(path)], monkeypatch, capsys)
    assert_short_error(code, err)
    assert err.startswith(f"error: {path}: {lead}"), err
    said = err.removeprefix(f"error: {path}: ").split(". Correct the field")[0].split("; ")
    assert len(said) == len(set(said)) and "None" not in err, err
    assert len(err) < 400, err


# MINIMAL's arms have no gpu_ids: valid only where GPU memory is not measured.
NO_GPUS = '\n[families.not_applicable]\ngpu_memory = "a test host without GPUs"\n'


def test_a_byte_order_mark_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "matrix.toml"
    path.write_bytes(b"\xef\xbb\xbf" + (MINIMAL + NO_GPUS).encode())
    code, out, err = run_main(["validate", str(path)], monkeypatch, capsys)
    assert code == 0, err
    assert "matrix id: " in out


def test_distinct_loopback_addresses_may_share_a_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "matrix.toml"
    path.write_text(edit("port = 9002", 'port = 9001\nhost = "127.0.0.2"') + NO_GPUS)
    code, _, err = run_main(["validate", str(path)], monkeypatch, capsys)
    assert code == 0, err


def test_a_prefill_probe_needs_room_for_one_output_token_only(tmp_path: Path) -> None:
    path = tmp_path / "matrix.toml"
    text = first_arm("[arms.recipe]\nmax_model_len = 1025\n")
    path.write_text(text.replace('kind = "natural"', 'kind = "prefill_probe"'))
    assert load_matrix(path).cells[0].input_tokens == 1024


def test_an_ipv6_arm_gets_a_bracketed_url(tmp_path: Path) -> None:
    path = tmp_path / "matrix.toml"
    path.write_text(edit("port = 9001", 'port = 9001\nhost = "::1"'))
    assert load_matrix(path).arms[0].base_url == "http://[::1]:9001"


def test_the_matrix_knows_every_simulator_fault() -> None:
    from simulator.profile import FaultSpec

    assert {f.name for f in dataclasses.fields(FaultSpec)} == SIMULATOR_FAULTS


USAGE = [
    (["audit"], "Missing argument 'CAMPAIGN|FOLDER'"),
    (["statuss"], "No such command 'statuss'"),
    (["run"], "Missing argument 'path'"),
    (["validate"], "Missing argument 'path'"),
    (["review", "x", "--decision", "approve"], "'approve' is not one of 'promote'"),
    (["sim", "--port", "abc"], "'--port'"),
    (["status", "--bogus"], "No such option: --bogus"),
    (["status", "--db", "bogus://x"], "--db: not a database URL"),
    (["status", "--db", "not a url"], "--db: not a database URL"),
    (["run", "matrix.toml", "--db", "bogus://x"], "--db: not a database URL"),
    (["status", "--workdir", "typo"], "typo: no such folder"),
    (["status", "x", "--workdir", "."], "no ledger yet"),
    (["review", "x", "--workdir", "."], "no ledger yet"),
    (["restore", "x", "--workdir", "."], "no ledger yet"),
    (["restore", "--campaign", "x", "--workdir", "."], "no ledger yet"),  # the old spelling
    (["audit", "nowhere"], "no bundle folder and no campaign named 'nowhere'"),
    (["review", "x", "--note", "why"], "--note given without --decision"),
    (["review", "x", "--decision", "promote"], "a review needs a note"),
    (["review", "x", "--decision", "promote", "--note", "n", "--cell", "c/a"], "--cell goes with"),
    (
        ["review", "x", "--decision", "rerun_cells", "--note", "n", "--force-reason", "r"],
        "--force-reason goes with --decision promote",
    ),
    (["freeze", "matrix.toml", "-o", "typo/frozen.json"], "typo: no such folder"),
    (["freeze", "matrix.toml", "-o", "."], ".: is a folder"),
    (["run", "matrix.toml", "--workdir", "matrix.toml"], "matrix.toml: is a file, not a folder"),
]


@pytest.mark.parametrize(("args", "expected"), USAGE, ids=[" ".join(args) for args, _ in USAGE])
def test_a_bad_command_line_is_one_short_error(
    args: list[str], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "matrix.toml").write_text(MINIMAL)
    monkeypatch.chdir(tmp_path)
    before = files_under(tmp_path)
    code, out, err = run_main(args, monkeypatch, capsys)
    assert_short_error(code, err)
    assert expected in err
    assert out == ""  # checked before anything is printed (a review's card included)
    assert files_under(tmp_path) == before  # no ledger, no workdir, no Prefect home


def test_a_ledger_that_is_no_database_is_one_short_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "faceoff.db").write_text("not a database\n")
    code, _, err = run_main(["status", "--workdir", str(tmp_path)], monkeypatch, capsys)
    assert_short_error(code, err)
    assert "faceoff.db: cannot open the ledger: file is not a database" in err


def test_status_of_a_workdir_without_a_ledger_creates_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run_main(["status", "--workdir", str(tmp_path)], monkeypatch, capsys)
    assert code == 0, err
    assert "none yet" in out
    restored = run_main(["restore", "--workdir", str(tmp_path)], monkeypatch, capsys)
    assert restored[0] == 0 and "no campaign needs restoration" in restored[1]
    assert files_under(tmp_path) == set()


SUBPROCESS = [
    (["audit"], "Missing argument 'CAMPAIGN|FOLDER'"),
    (["statuss"], "No such command"),
    (["review", "x", "--decision", "approve"], "'--decision'"),
    (["status", "--db", "bogus://x"], "--db"),
    (["status", "--workdir", "typo"], "no such folder"),
    (["validate", "latin1.toml"], "latin1.toml: is not UTF-8"),
    (["validate", "."], "is a folder"),
]


@pytest.mark.parametrize(
    ("args", "expected"), SUBPROCESS, ids=[" ".join(args) for args, _ in SUBPROCESS]
)
def test_the_real_cli_exits_2_without_a_traceback(
    args: list[str], expected: str, tmp_path: Path
) -> None:
    (tmp_path / "latin1.toml").write_bytes(LATIN1)
    before = files_under(tmp_path)
    result = faceoff(*args, cwd=tmp_path)
    assert_short_error(result.returncode, result.stderr)
    assert expected in result.stderr
    assert files_under(tmp_path) == before


def test_bare_faceoff_shows_the_help() -> None:
    result = faceoff()
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "validate" in result.stdout + result.stderr


def test_the_context_flag_alone_limits_the_cells_and_leaves_the_frozen_content_as_written(
    tmp_path: Path,
) -> None:
    from faceoff.formats.frozen_matrix import freeze

    path = tmp_path / "matrix.toml"
    path.write_text(first_arm('engine_args = ["--max-model-len", "32K"]\n'))
    matrix = load_matrix(path)
    assert matrix.arms[0].max_model_len == 32768  # vLLM's binary K
    assert matrix.arms[1].max_model_len is None
    dumped = freeze(matrix).matrix.model_dump(mode="json")
    assert dumped["arms"][0]["recipe"]["max_model_len"] is None  # derived, never written back
