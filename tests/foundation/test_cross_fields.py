"""Fields that contradict each other are refused at validate, each message naming both: a
mis-set that would lose the night or corrupt its evidence without an error at run time,
written the way a hurried operator writes it. Same shape as test_bad_input's table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.coherence.engine_flags import VLLM_VERSION, unknown_flags, vllm_flags
from matrix.toml.reader import MatrixError, load_matrix
from tests.foundation.test_bad_input import (
    Case,
    assert_short_error,
    cell_field,
    edit,
    first_arm,
    materialize,
    run_main,
)
from tests.foundation.test_matrix import MINIMAL

VLLM = 'engine = "vllm"\n'
RULE = '\n[rule]\n[[rule.criteria]]\nmetric = "{metric}"\nnon_inferiority = 0.05\n{extra}\n'


def with_rule(text: str, metric: str = "ttft_s", extra: str = "") -> str:
    return text + RULE.format(metric=metric, extra=extra)


def two_models(tmp: Path, manifest: str) -> str:
    """Two vLLM arms serving different models from mounts; the incumbent's manifest given."""
    text = first_arm(
        f'{VLLM}command = ["/models/a"]\nweights_manifest = "{manifest}"\n'
        '[[arms.mounts]]\nsource = "/srv/a"\ntarget = "/models/a"\n'
    )
    return text.replace(
        'port = 9002\nserved_model = "m"\n',
        f'port = 9002\nserved_model = "m"\n{VLLM}command = ["/models/b"]\n'
        '[[arms.mounts]]\nsource = "/srv/b"\ntarget = "/models/b"\n',
    )


def manifest_of_the_other_arm(tmp: Path) -> Path:
    path = tmp / "matrix.toml"
    path.write_text(two_models(tmp, "/models/b"))
    return path


def dataset_in_another_format(tmp: Path) -> Path:
    (tmp / "chat.jsonl").write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    entry = (
        '[[cells]]\nkind = "dataset"\nconcurrency = 1\nrequests = 2\n'
        'dataset = { file = "chat.jsonl", format = "sharegpt" }\n'
    )
    path = tmp / "matrix.toml"
    path.write_text(MINIMAL + "\n" + entry)
    return path


INCUMBENT_ONLY = (
    cell_field('arms = ["old"]')
    + edit("[[cells]]", '[[cells]]\nid = "both"')[MINIMAL.index("[[cells]]") :]
)

CASES = [
    Case("duplicate-gpu-ids", first_arm("gpu_ids = [0, 0]"), ("gpu_ids", "GPU 0 more than once")),
    Case(
        "visible-devices-on-the-host",
        first_arm('gpu_ids = [0, 1]\nenv = { CUDA_VISIBLE_DEVICES = "2,3" }').replace(
            'lane = "docker"', 'lane = "process"\ncommand = ["vllm", "serve", "/m"]', 1
        ),
        ("env.CUDA_VISIBLE_DEVICES", "'2,3' contradicts gpu_ids = [0, 1]"),
    ),
    Case(
        "visible-devices-in-a-container",
        first_arm('gpu_ids = [2, 3]\nenv = { CUDA_VISIBLE_DEVICES = "2,3" }'),
        ("contradicts gpu_ids = [2, 3]", "numbered 0,1"),
    ),
    Case(
        "quantization-contradicts-the-flag",
        first_arm(f'{VLLM}expected_quantization = "exl3"\nengine_args = ["--quantization", "fp8"]'),
        ("expected_quantization", "'exl3' contradicts --quantization fp8"),
    ),
    Case(
        "manifest-of-the-other-arm",
        manifest_of_the_other_arm,
        (
            "arms[0] (name='old').weights_manifest",
            "model of arm 'new' (its command serves /models/b)",
        ),
    ),
    Case(
        "recipe-contradicts-the-flags",
        first_arm(f'{VLLM}engine_args = ["-tp", "2"]\n[arms.recipe]\ntensor_parallel = 4\n'),
        ("recipe.tensor_parallel", "tensor_parallel = 4 contradicts -tp 2"),
    ),
    Case(
        "recipe-without-speculation-but-the-flag",
        first_arm(
            f"{VLLM}engine_args = ['--speculative-config', '{{\"method\": \"ngram\"}}']\n"
            '[arms.recipe]\nspeculation = "none"\n'
        ),
        ("recipe.speculation", "contradicts --speculative-config"),
    ),
    Case(
        "flag-spelled-close-to-a-known-one",
        first_arm(f'{VLLM}engine_args = ["--max-model-length", "8192"]'),
        ("engine_args", "--max-model-length is no flag of vLLM", "did you mean --max-model-len?"),
    ),
    Case(
        "underscored-flag-spelled-close",
        first_arm(f'{VLLM}engine_args = ["--gpu_memory_utilisation=0.9"]'),
        ("did you mean --gpu-memory-utilization?",),
    ),
    Case(
        "ambiguous-prefix",
        first_arm(f'{VLLM}engine_args = ["--max-num-queued", "8"]'),
        ("--max-num-queued-reqs or --max-num-queued-tokens",),
    ),
    Case(
        "speculative-config-not-json",
        first_arm(f"{VLLM}engine_args = ['--speculative-config', '{{method: ngram}}']"),
        ("engine_args", "is not JSON", "one JSON object"),
    ),
    Case(
        "deadline-far-below-the-requests",
        cell_field("deadline_s = 10\nsampling = { ignore_eos = true, max_tokens = 16384 }"),
        ("deadline_s", "deadline_s = 10 is below the 16 s", "2 round(s)", "on arm 'old'"),
    ),
    Case(
        "warmups-dwarf-the-requests",
        cell_field("warmups = 40"),
        (".warmups", "warmups = 40 dwarf the 2 scored requests (requests)"),
    ),
    Case(
        "arm-warmups-dwarf-its-cells",
        first_arm("warmups = 500"),
        ("(name='old').warmups", "dwarf the 2 scored requests of the arm's cells"),
    ),
    Case(
        "dataset-in-another-format",
        dataset_in_another_format,
        ("cells[1].dataset.format", "is not 'sharegpt' as format declares", "chat.jsonl"),
    ),
    Case(
        "rule-kinds-match-no-cell",
        with_rule(MINIMAL, extra='kinds = ["needle"]'),
        ("rule.criteria[0].kinds", "judges no cell", "kinds = ['needle']"),
    ),
    Case(
        "rule-judges-a-cell-only-the-incumbent-runs",
        with_rule(INCUMBENT_ONLY, extra='cells = ["natural-1024-c1"]'),
        ("rule.criteria[0].cells", "names cell 'natural-1024-c1', which only old runs"),
    ),
    Case(
        "decode-criterion-on-one-token",
        with_rule(cell_field("sampling = { max_tokens = 1 }"), metric="decode_tps"),
        ("rule.criteria[0].metric", "stop after one token", "natural-1024-c1"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fields_that_contradict_each_other_are_one_short_error(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    path = materialize(case, tmp_path)
    code, out, err = run_main(["validate", str(path)], monkeypatch, capsys)
    assert_short_error(code, err)
    for expected in case.expect:
        assert expected in err, f"{expected!r} not in {err!r}"
    assert out == ""


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_message_starts_with_a_field_the_user_wrote(case: Case, tmp_path: Path) -> None:
    with pytest.raises(MatrixError) as caught:
        load_matrix(materialize(case, tmp_path))
    assert caught.value.what.startswith(("arms[", "cells[", "rule.")), caught.value.what


def test_the_same_fields_agreeing_pass(tmp_path: Path) -> None:
    agreeing = first_arm(
        f'{VLLM}gpu_ids = [0, 1]\nexpected_quantization = "awq"\n'
        'engine_args = ["-q", "awq_marlin", "-tp", "2", "--kv-cache-dtype", "fp8", '
        '"--kv-cache-memory", "8G", "--max_model_len=32768", "--compilation-config.mode", "3"]\n'
        'env = { CUDA_VISIBLE_DEVICES = "1,0" }\n'
        '[arms.recipe]\ntensor_parallel = 2\nkv_cache_dtype = "FP8 (e4m3)"\n'
    )
    path = tmp_path / "matrix.toml"
    path.write_text(with_rule(agreeing, extra='kinds = ["natural"]'))
    assert load_matrix(path).arms[0].max_model_len == 32768  # vLLM reads --a_b as --a-b


def test_the_flag_list_is_the_pinned_vllms_own() -> None:
    flags = vllm_flags()
    assert VLLM_VERSION == "0.32.0"
    assert {"--max-model-len", "--served-model-name", "-tp", "--no-enable-prefix-caching"} <= flags
    assert len(flags) > 400  # every spelling of `vllm serve --help=all`, not a hand list
    (found,) = unknown_flags(["vllm", "serve", "/m", "--max-model-length", "1"], flags)
    assert (found.flag, found.near) == ("--max-model-length", "--max-model-len")


def test_a_deadline_only_early_outputs_fit_is_a_warning_the_preflight_repeats(
    tmp_path: Path,
) -> None:
    from faceoff.formats.frozen_matrix import freeze
    from flows.campaign.preflight.static import static_checks
    from matrix.coherence.findings import findings

    path = tmp_path / "matrix.toml"
    path.write_text(cell_field("deadline_s = 10"))  # 2 requests of up to 16384 tokens
    matrix = load_matrix(path)  # natural outputs may end early: valid
    (found,) = [f for f in findings(matrix) if f.subject.startswith("cell")]
    assert found.fields == "deadline_s, sampling.max_tokens"
    assert "deadline_s = 10 is below the 16 s its 2 round(s)" in found.finding
    repeated = [c for c in static_checks(freeze(matrix)) if c.check == "fields"]
    (cell,) = [c for c in repeated if c.subject == "cell natural-1024-c1"]
    assert cell.status.value == "WARN" and cell.finding == f"{found.fields}: {found.finding}"
