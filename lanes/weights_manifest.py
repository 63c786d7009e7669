"""The weights manifest: sha256 of a model directory's index, config, tokenizer and chat
template files: everything small that changes what the model is served as.

Weight shards are left out on purpose: hashing hundreds of GiB at every start
would cost minutes, while the shard index (``*.index.json``) names every shard
with its tensors, and the config and quantization files say what the shards are.
A lane's path is resolved through its mounts to the host directory first.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from faceoff.canonical import content_sha256, file_sha256
from faceoff.errors import FaceoffError
from faceoff.formats.lane import ManifestFile, WeightsManifest
from matrix.arm import Arm, LaneKind

# config.json, generation_config.json, *.index.json, quantization_config.json,
# tokenizer.json, tokenizer_config.json, special_tokens_map.json, vocab.json,
# chat_template.json; chat_template.jinja (and any other template: the engine serves
# the model through it); SentencePiece models (tokenizer.model, spiece.model …).
MANIFEST_PATTERNS = ("*.json", "*.jinja", "*.model", "*.tiktoken", "vocab.txt", "merges.txt")


def host_path(arm: Arm, path: str) -> Path:
    """Where a lane path lives on the host: through the longest matching mount for Docker."""
    if arm.lane is not LaneKind.DOCKER:
        return Path(path)
    wanted = PurePosixPath(path)
    matches = [m for m in arm.mounts if wanted.is_relative_to(PurePosixPath(m.target))]
    if not matches:
        targets = ", ".join(m.target for m in arm.mounts) or "none"
        raise FaceoffError(
            f"{path} is not under any mount of the lane (mount targets: {targets})",
            where=f"arms[{arm.name}].weights_manifest",
            fix="point weights_manifest at the model directory inside a mount",
        )
    mount = max(matches, key=lambda m: len(PurePosixPath(m.target).parts))
    return Path(mount.source) / wanted.relative_to(PurePosixPath(mount.target))


def build_manifest(arm: Arm, directory: str) -> WeightsManifest:
    root = host_path(arm, directory)
    if not root.is_dir():
        raise FaceoffError(
            f"model directory {root} does not exist on this host",
            where=f"arms[{arm.name}].weights_manifest",
            fix="check the mount source and the weights_manifest path",
        )
    files = [_hash_file(root, p) for p in _manifest_paths(root)]
    if not files:
        raise FaceoffError(
            f"model directory {root} has no index, config or tokenizer files to hash",
            where=f"arms[{arm.name}].weights_manifest",
            fix="point weights_manifest at the checkpoint directory (the one with config.json)",
        )
    digest = content_sha256([{"path": f.path, "sha256": f.sha256} for f in files])
    return WeightsManifest(
        directory=directory, host_directory=str(root), files=files, sha256=digest
    )


def _manifest_paths(root: Path) -> list[Path]:
    found = {p for pattern in MANIFEST_PATTERNS for p in root.rglob(pattern) if p.is_file()}
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def _hash_file(root: Path, path: Path) -> ManifestFile:
    return ManifestFile(
        path=path.relative_to(root).as_posix(), sha256=file_sha256(path), size=path.stat().st_size
    )
