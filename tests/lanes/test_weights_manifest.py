"""Files a lane judges by: the weights manifest and the protected operator files."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from faceoff.errors import FaceoffError
from faceoff.formats.protected import compare, hash_file, snapshot
from lanes.lane_context import LanePurpose, next_run_dir
from lanes.weights_manifest import build_manifest, host_path
from tests.lanes.helpers import arm, checkpoint

WHEN = datetime(2026, 10, 17, 13, 3, 57, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]


def test_manifest_hashes_config_and_tokenizer_files_not_shards(tmp_path: Path) -> None:
    model = checkpoint(tmp_path)
    the_arm = arm(weights_manifest=str(model))
    first = build_manifest(the_arm, str(model))
    assert [f.path for f in first.files] == [
        "config.json",
        "model.safetensors.index.json",
        "sub/generation_config.json",
        "tokenizer.json",
        "tokenizer.model",
    ]
    (model / "model-00001-of-00002.safetensors").write_bytes(b"\x02" * 1024)
    assert build_manifest(the_arm, str(model)).sha256 == first.sha256
    (model / "config.json").write_text('{"quantization_config": {"quant_method": "fp4"}}')
    assert build_manifest(the_arm, str(model)).sha256 != first.sha256


def test_manifest_hashes_the_chat_template_and_tokenizer_models(tmp_path: Path) -> None:
    """A new chat template changes what the model is served as, shards and config unchanged."""
    model = checkpoint(tmp_path)
    (model / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    (model / "spiece.model").write_bytes(b"\x00sentencepiece")
    the_arm = arm(weights_manifest=str(model))
    first = build_manifest(the_arm, str(model))
    assert {"chat_template.jinja", "spiece.model"} <= {f.path for f in first.files}
    (model / "chat_template.jinja").write_text("{{ messages[-1].content }}<|assistant|>")
    assert build_manifest(the_arm, str(model)).sha256 != first.sha256


def test_container_paths_resolve_through_the_longest_mount(tmp_path: Path) -> None:
    model = checkpoint(tmp_path)
    the_arm = arm(
        lane="docker",
        image="r@sha256:" + "a" * 64,
        command=None,
        mounts=[
            {"source": "/srv", "target": "/models"},
            {"source": str(model), "target": "/models/glm-5.3-flash-nvfp4"},
        ],
    )
    # the mount is named nvfp4; the manifest reads what is really there
    assert host_path(the_arm, "/models/glm-5.3-flash-nvfp4/sub") == model / "sub"
    manifest = build_manifest(the_arm, "/models/glm-5.3-flash-nvfp4")
    assert manifest.host_directory == str(model) and len(manifest.files) == 5
    with pytest.raises(FaceoffError, match="not under any mount"):
        host_path(the_arm, "/weights/glm")


def test_manifest_errors_say_what_to_fix(tmp_path: Path) -> None:
    the_arm = arm()
    with pytest.raises(FaceoffError, match="does not exist on this host"):
        build_manifest(the_arm, str(tmp_path / "nope"))
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "model.safetensors").write_bytes(b"x")
    with pytest.raises(FaceoffError, match="no index, config or tokenizer files"):
        build_manifest(the_arm, str(tmp_path / "shards"))


def test_protected_files_compare_before_and_after(tmp_path: Path) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text("llm.primary: 127.0.0.1:8000\n")
    unit = tmp_path / "llm-primary.service"
    unit.write_text("[Service]\n")
    tokens = tmp_path / "tokens.env"
    tokens.write_text("T=1\n")
    later = tmp_path / "later.conf"
    paths = [str(p) for p in (routes, unit, tokens, later, tmp_path / "never", tmp_path)]
    before = snapshot(paths, WHEN)
    assert [f.state for f in before.files] == [
        "present", "present", "present", "missing", "missing", "unreadable",
    ]  # fmt: skip
    routes.write_text("llm.primary: 127.0.0.1:8001\n")
    tokens.unlink()
    later.write_text("x")
    checks = {c.path: c for c in compare(before, snapshot(paths, WHEN))}
    assert checks[str(routes)].change == "modified"
    assert checks[str(routes)].before.sha256 != checks[str(routes)].after.sha256
    assert checks[str(unit)].unchanged
    assert checks[str(tokens)].change == "deleted"
    assert checks[str(later)].change == "created"
    assert checks[str(tmp_path / "never")].unchanged
    assert checks[str(tmp_path)].change == "unreadable"


def test_an_unreadable_file_is_recorded_not_raised(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("x")
    secret.chmod(0)
    code = (
        "import sys; from datetime import UTC, datetime; "
        "from faceoff.formats.protected import snapshot; "
        "print(snapshot([sys.argv[1]], datetime.now(UTC)).files[0].state)"
    )
    # Root reads every file: the child gives up the capabilities that let it.
    drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    result = subprocess.run(
        [*drop, sys.executable, "-c", code, str(secret)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "unreadable"


def test_run_folders_never_reuse_a_number(tmp_path: Path) -> None:
    first = next_run_dir(tmp_path, "inc", LanePurpose.CAMPAIGN)
    second = next_run_dir(tmp_path, "inc", LanePurpose.CAMPAIGN)
    restore = next_run_dir(tmp_path, "inc", LanePurpose.RESTORE)
    names = [first.name, second.name, restore.name]
    assert names == ["campaign-001", "campaign-002", "restore-001"]
    assert first.parent == tmp_path / "lanes" / "inc"


def test_a_fifo_put_where_a_protected_file_was_is_unreadable_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "routes.yaml"
    os.mkfifo(fifo)  # opened for reading without O_NONBLOCK, it would wait for a writer
    found = hash_file(str(fifo))
    assert (found.state, found.detail) == ("unreadable", "not a regular file")
