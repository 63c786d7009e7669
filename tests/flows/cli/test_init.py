"""`faceoff init`: a starting matrix from flags (three typical inputs) or questions, each a
matrix faceoff and its schema accept, with the `vllm serve` flags mapped to the fields; an
input that cannot make one writes nothing and says which."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import jsonschema
import pytest

from evidence.bundle.schema_export import MATRIX_SCHEMA_PATH
from flows.cli.init import from_questions
from matrix.arm import LaneKind
from matrix.model import Matrix
from matrix.toml.reader import load_matrix
from matrix.toml.serve_line import read_serve_line
from matrix.toml.starter import Answers, ArmAnswers, starting_matrix
from tests.foundation.cli import faceoff
from tests.foundation.test_matrix_schema import as_a_language_server_sees_it

DIGEST = "sha256:" + "ab" * 32
FP8 = (
    "vllm serve /models/glm-5.3-fp8 --max-model-len 65536 --tensor-parallel-size 2 "
    "--quantization fp8 --kv-cache-dtype fp8 --served-model-name llm.primary"
)
NVFP4 = (
    "vllm serve /models/glm-5.3-nvfp4 --max-model-len 65536 -tp 2 --quantization modelopt_fp4 "
    "--kv-cache-dtype fp8 --served-model-name llm.primary --port 8011 --host 0.0.0.0 "
    """--speculative-config '{"method": "mtp", "num_speculative_tokens": 3}'"""
)
TYPICAL = {
    "two-serve-lines": ["--incumbent-serve", FP8, "--candidate-serve", NVFP4, "--gpus", "0,1"],
    "images-and-serve-lines": [
        "--incumbent-image", f"vllm/vllm-openai@{DIGEST}", "--incumbent-serve", FP8,
        "--candidate-image", f"ghcr.io/lab/vllm@{DIGEST}", "--candidate-serve", NVFP4,
        "--gpus", "0,1",
    ],
    "images-alone": [
        "--incumbent-image", f"vllm/vllm-openai@{DIGEST}", "--candidate-image",
        f"ghcr.io/lab/vllm@{DIGEST}", "--model", "/models/glm-5.3", "--gpus", "0",
    ],
}  # fmt: skip


def written(tmp_path: Path, *args: str) -> tuple[Matrix, str]:
    path = tmp_path / "fp8-vs-nvfp4.toml"
    done = faceoff("init", str(path), *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"faceoff validate {path}" in done.stdout
    text = path.read_text(encoding="utf-8")
    schema = json.loads(MATRIX_SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator(schema).validate(as_a_language_server_sees_it(text))
    checked = faceoff("validate", str(path), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    return load_matrix(path), text


@pytest.mark.parametrize("name", sorted(TYPICAL))
def test_a_typical_input_writes_a_matrix_that_validates(name: str, tmp_path: Path) -> None:
    matrix, text = written(tmp_path, *TYPICAL[name])
    assert matrix.campaign.name == "fp8-vs-nvfp4" and len(matrix.arms) == 2
    assert text.startswith("#:schema ") and "\n# [rule]\n" in text  # commented, with a rule
    assert [a.port for a in matrix.arms] == ([8000, 8011] if "serve" in name else [8000, 8001])
    lanes = {a.lane for a in matrix.arms}
    assert lanes == ({LaneKind.PROCESS} if name == "two-serve-lines" else {LaneKind.DOCKER})


def test_the_serve_line_fills_the_arm_and_its_recipe(tmp_path: Path) -> None:
    matrix, _ = written(tmp_path, *TYPICAL["two-serve-lines"])
    incumbent, candidate = matrix.arms
    assert incumbent.command == ["vllm", "serve", "/models/glm-5.3-fp8"]
    assert (candidate.host, candidate.port, candidate.served_model) == (
        "0.0.0.0",
        8011,
        "llm.primary",
    )
    assert not {"--port", "--host", "--served-model-name"} & set(candidate.engine_args)
    assert "--speculative-config" in candidate.engine_args  # the engine still gets it
    recipe = candidate.recipe
    assert (recipe.checkpoint, recipe.max_model_len, recipe.tensor_parallel) == (
        "/models/glm-5.3-nvfp4", 65536, 2,
    )  # fmt: skip
    assert (recipe.kv_cache_dtype, recipe.speculation) == ("fp8", "mtp, 3 tokens")
    assert (candidate.expected_quantization, incumbent.expected_quantization) == (
        "modelopt_fp4", "fp8",
    )  # fmt: skip
    assert all(a.gpu_ids == [0, 1] for a in matrix.arms)
    # the starting cells fit the declared context with their max_tokens
    assert all(c.input_tokens + c.sampling.max_tokens <= 65536 for c in matrix.cells)


def test_an_image_runs_the_serve_line_as_its_arguments(tmp_path: Path) -> None:
    matrix, _ = written(tmp_path, *TYPICAL["images-and-serve-lines"])
    incumbent = matrix.arms[0]
    assert (incumbent.engine, incumbent.command) == ("vllm", ["/models/glm-5.3-fp8"])
    assert incumbent.engine_args[:2] == ["--max-model-len", "65536"]
    assert [(m.source, m.target) for m in incumbent.mounts] == [("/models/glm-5.3-fp8",) * 2]


def test_the_questions_give_the_same_matrix(tmp_path: Path) -> None:
    answers = iter(
        ["effort-ab", "exl3", f"vllm/vllm-openai@{DIGEST}", FP8, "nvfp4", "", NVFP4, "0,1"]
    )
    asked: list[str] = []

    def ask(question: str, default: str) -> str:
        asked.append(question)
        return next(answers)

    text = starting_matrix(from_questions(tmp_path / "m.toml", ask))
    path = tmp_path / "m.toml"
    path.write_text(text)
    matrix = load_matrix(path)
    assert [(a.name, a.lane) for a in matrix.arms] == [
        ("exl3", LaneKind.DOCKER), ("nvfp4", LaneKind.PROCESS),
    ]  # fmt: skip
    assert len(asked) == 8 and matrix.campaign.name == "effort-ab"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--incumbent-image", "vllm/vllm-openai:latest", "--candidate-image",
          f"x/y@{DIGEST}", "--model", "/m"], "arms[0] (name='incumbent').image: image "),
        (["--incumbent-serve", FP8 + " --api-key sk-planted", "--candidate-serve", NVFP4],
         "--incumbent-serve: --api-key would put a secret in the matrix"),
        (["--incumbent-serve", FP8, "--candidate-serve", NVFP4, "--gpus", "0"],
         "--gpus: 1 GPU(s) given, but the incumbent's serve line asks --tensor-parallel-size 2"),
        (["--incumbent-serve", "python serve.py", "--candidate-serve", NVFP4],
         "is not a `vllm serve MODEL …` command line"),
        (["--incumbent-image", f"x/y@{DIGEST}", "--candidate-serve", NVFP4], "--model: "),
        (["--incumbent-serve", FP8, "--candidate-serve", NVFP4],
         "--gpus: no --gpus given, but the incumbent's serve line asks --tensor-parallel-size 2"),
        (["--incumbent-serve", "python -m sglang.launch_server --model-path /m --tp 2",
          "--candidate-serve", NVFP4, "--gpus", "0,1"],
         "an SGLang server line is not read (faceoff init reads `vllm serve`); give its image "
         "with --incumbent-image"),
        (["--incumbent-serve", f"docker run x/y@{DIGEST} /m", "--incumbent-image",
          f"z/w@{DIGEST}", "--candidate-serve", NVFP4, "--gpus", "0,1"], "differ; give one"),
        ([], "nothing to start from, and no terminal to ask on"),
    ],
)  # fmt: skip
def test_an_input_that_cannot_make_a_matrix_writes_nothing(
    args: list[str], said: str, tmp_path: Path
) -> None:
    done = faceoff("init", "m.toml", *args, cwd=tmp_path)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert "sk-planted" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_kept(tmp_path: Path) -> None:
    (tmp_path / "m.toml").write_text("mine\n")
    done = faceoff("init", "m.toml", *TYPICAL["images-alone"], cwd=tmp_path)
    assert done.returncode == 2 and "refusing to overwrite" in done.stderr
    assert (tmp_path / "m.toml").read_text() == "mine\n"


def test_a_serve_line_is_read_as_vllm_reads_it() -> None:
    line = read_serve_line(
        "python -m vllm.entrypoints.cli.main serve --model /m --port=9000 -q awq", "--x"
    )
    assert (line.launcher[-1], line.model, line.binding) == ("serve", "/m", {"--port": "9000"})
    assert line.args == ["-q", "awq"] and line.quantization == "awq"
    assert shlex.join(line.args) == "-q awq"


def start(incumbent: str, candidate: str, gpus: list[int], tmp_path: Path) -> tuple[Matrix, str]:
    arms = (
        ArmAnswers("old", "incumbent", serve=incumbent),
        ArmAnswers("new", "candidate", serve=candidate),
    )
    text = starting_matrix(Answers("night", 1, arms, gpus))
    path = tmp_path / "m.toml"
    path.write_text(text)
    return load_matrix(path), text


def test_variables_before_the_serve_line_become_the_arms_env(tmp_path: Path) -> None:
    line = "VLLM_ATTENTION_BACKEND=FLASHINFER HF_TOKEN=hf_planted " + FP8
    matrix, text = start(line, NVFP4, [0, 1], tmp_path)
    incumbent = matrix.arms[0]
    assert incumbent.command == ["vllm", "serve", "/models/glm-5.3-fp8"]  # not argv[0]
    assert incumbent.env == {"VLLM_ATTENTION_BACKEND": "FLASHINFER"}
    assert incumbent.secrets == {"HF_TOKEN": "HF_TOKEN"} and "hf_planted" not in text
    assert "HF_TOKEN is a secret: [arms.secrets]" in text  # said, as a comment


def test_a_docker_run_line_gives_the_image_mounts_env_and_gpus(tmp_path: Path) -> None:
    line = (
        "docker run --rm --ipc=host -p 8000:8000 --gpus '\"device=2,3\"' --shm-size 16g "
        "-v /srv/models/fp8:/models/glm-5.3-fp8:ro -e VLLM_USE_V1=1 -e HF_TOKEN "
        f"vllm/vllm-openai@{DIGEST} /models/glm-5.3-fp8 --max-model-len 65536 -tp 2"
    )
    matrix, text = start(line, NVFP4, [], tmp_path)
    incumbent = matrix.arms[0]
    assert (incumbent.lane, incumbent.image) == (LaneKind.DOCKER, f"vllm/vllm-openai@{DIGEST}")
    assert (incumbent.command, incumbent.engine) == (["/models/glm-5.3-fp8"], "vllm")
    assert [(m.source, m.target, m.read_only) for m in incumbent.mounts] == [
        ("/srv/models/fp8", "/models/glm-5.3-fp8", True)
    ]
    assert incumbent.env == {"VLLM_USE_V1": "1"} and incumbent.secrets == {"HF_TOKEN": "HF_TOKEN"}
    assert incumbent.shm_size == "16g" and all(a.gpu_ids == [2, 3] for a in matrix.arms)
    assert "docker run --rm --ipc host -p 8000:8000 left out" in " ".join(text.split())


def test_the_arms_share_the_incumbents_model_id(tmp_path: Path) -> None:
    own = FP8.replace(" --served-model-name llm.primary", "")
    other = NVFP4.replace(" --served-model-name llm.primary", "")
    matrix, _ = start(own, other, [0, 1], tmp_path)
    assert [a.served_model for a in matrix.arms] == ["/models/glm-5.3-fp8"] * 2


def test_cells_a_smaller_context_cannot_take_are_said(tmp_path: Path) -> None:
    small = NVFP4.replace("--max-model-len 65536", "--max-model-len 16384")
    path = tmp_path / "m.toml"
    done = faceoff(
        "init", str(path), "--incumbent-serve", FP8, "--candidate-serve", small,
        "--gpus", "0,1", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    note = "input_tokens [32768] left out of the cells: with max_tokens = 1024 they exceed arm"
    assert f"note: {note} 'candidate''s --max-model-len 16384" in done.stdout
    assert note in " ".join(line.lstrip("# ") for line in path.read_text().splitlines())
    assert {c.input_tokens for c in load_matrix(path).cells} == {2048, 8192}


def test_no_gpus_is_said(tmp_path: Path) -> None:
    one = FP8.replace(" --tensor-parallel-size 2", "")
    _, text = start(one, NVFP4.replace(" -tp 2", ""), [], tmp_path)
    assert "# - no --gpus: gpu_ids = [] on both arms, so no GPU is sampled" in text


def test_each_answer_is_checked_as_it_is_given(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    answers = iter([
        "Effort AB", "effort-ab", "exl3", "vllm/vllm-openai:latest", f"vllm/vllm-openai@{DIGEST}",
        "python serve.py", FP8, "nvfp4", "", "", NVFP4, "0", "0,1",
    ])  # fmt: skip
    asked: list[str] = []

    def ask(question: str, default: str) -> str:
        asked.append(question)
        return next(answers)

    got = from_questions(tmp_path / "m.toml", ask)
    said = capsys.readouterr().err
    assert len(asked) == 13 and got.campaign == "effort-ab" and got.gpus == [0, 1]
    assert "is not pinned by digest" in said and "is not a `vllm serve MODEL …`" in said
    assert "an arm without an image needs its `vllm serve MODEL …` line" in said
    assert "--gpus: 1 GPU(s) given, but the incumbent's serve line asks" in said


def test_visible_devices_of_a_serve_line_are_the_gpus(tmp_path: Path) -> None:
    matrix, _ = start("CUDA_VISIBLE_DEVICES=2,3 " + FP8, NVFP4, [], tmp_path)
    assert [a.gpu_ids for a in matrix.arms] == [[2, 3], [2, 3]]
    assert matrix.arms[0].env == {"CUDA_VISIBLE_DEVICES": "2,3"}
