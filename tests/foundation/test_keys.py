"""Ed25519 key pairs and trust files: written once, read strictly."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from faceoff.errors import FaceoffError
from faceoff.exits import Exit
from faceoff.keys import (
    SIGNING_KEY_FILE_ENV,
    init_key_pair,
    operator_signing_key,
    read_public_keys,
    read_signing_key,
    signing_key_file,
    trust_line,
    use_signing_key,
)
from faceoff.trust import read_trust
from tests.foundation.cli import faceoff


def test_a_key_pair_is_written_private_to_its_owner_and_never_overwritten(tmp_path: Path) -> None:
    umask = os.umask(0o077)  # the public key is still readable by all
    try:
        pair = init_key_pair(tmp_path / "keys")
    finally:
        os.umask(umask)

    assert stat.S_IMODE(pair.private.stat().st_mode) == 0o600
    assert stat.S_IMODE(pair.public.stat().st_mode) == 0o644
    key = read_signing_key(pair.private)
    raw = key.public.key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert pair.fingerprint == key.fingerprint == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert pair.fingerprint in pair.public.read_text()
    assert "PRIVATE" not in pair.public.read_text()
    before = pair.private.read_bytes()
    with pytest.raises(FaceoffError, match="never overwritten"):
        init_key_pair(tmp_path / "keys")
    assert pair.private.read_bytes() == before


def test_the_public_key_file_is_plain_pem_that_other_tools_read(tmp_path: Path) -> None:
    pair = init_key_pair(tmp_path)
    loaded = serialization.load_pem_public_key(pair.public.read_bytes())

    [public] = read_public_keys(pair.public)
    assert public.key == loaded
    assert public.fingerprint == pair.fingerprint


def test_a_private_key_others_may_read_is_refused(tmp_path: Path) -> None:
    pair = init_key_pair(tmp_path)
    pair.private.chmod(0o644)
    with pytest.raises(FaceoffError, match=r"readable by others \(mode 0644\).*Run chmod 600"):
        read_signing_key(pair.private)


def test_a_key_file_that_is_not_a_regular_file_is_refused_without_reading_it(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "key"
    os.mkfifo(fifo)  # opening it for reading would block forever
    with pytest.raises(FaceoffError, match="not a regular file"):
        read_signing_key(fifo)
    with pytest.raises(FaceoffError, match="not a regular file"):
        read_public_keys(fifo)


def test_a_key_of_another_kind_is_named(tmp_path: Path) -> None:
    path = tmp_path / "rsa.key"
    path.write_text("-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n")
    path.chmod(0o600)
    with pytest.raises(FaceoffError, match="not an unencrypted PEM private key"):
        read_signing_key(path)


def test_the_key_file_comes_from_the_flag_then_the_environment(tmp_path: Path) -> None:
    environ = {SIGNING_KEY_FILE_ENV: "/etc/faceoff/op.key"}
    assert signing_key_file(environ, Path("/k")) == Path("/k")
    assert signing_key_file(environ) == Path("/etc/faceoff/op.key")
    assert signing_key_file({SIGNING_KEY_FILE_ENV: ""}) is None
    assert operator_signing_key({}) is None
    pair = init_key_pair(tmp_path)
    key = operator_signing_key({SIGNING_KEY_FILE_ENV: str(pair.private)})
    assert key is not None and key.fingerprint == pair.fingerprint


def test_a_trust_file_lists_fingerprints_and_keys_and_a_wrong_fingerprint_is_refused(
    tmp_path: Path,
) -> None:
    first, second = init_key_pair(tmp_path / "a"), init_key_pair(tmp_path / "b")
    keys = [read_public_keys(p.public)[0] for p in (first, second)]
    trust_file = tmp_path / "trusted"
    trust_file.write_text("# operators\n\n" + "\n".join(trust_line(k) for k in keys) + "\n")

    trust = read_trust([trust_file, first.public])  # the same key twice counts once
    assert trust.fingerprints == {first.fingerprint, second.fingerprint}
    assert len(trust.keys) == 2

    other = Ed25519PrivateKey.generate().public_key()
    body = trust_line(read_public_keys(first.public)[0]).split()[1]
    forged = trust_line(type(keys[0]).of(other)).split()[0]
    trust_file.write_text(f"{forged} {body}\n")
    with pytest.raises(
        FaceoffError, match=rf"trusted:1: the key's fingerprint is {first.fingerprint}"
    ):
        read_trust([trust_file])
    trust_file.write_text("sha256:abc\n")
    with pytest.raises(FaceoffError, match="not '<fingerprint> <key>'"):
        read_trust([trust_file])
    trust_file.write_text("# nothing yet\n")
    with pytest.raises(FaceoffError, match="holds no public key"):
        read_trust([trust_file])


def test_the_out_folder_is_made_0700_whatever_the_umask(tmp_path: Path) -> None:
    umask = os.umask(0)
    try:
        pair = init_key_pair(tmp_path / "new" / "keys")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(pair.private.parent.stat().st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_an_out_folder_others_may_write_to_is_refused(tmp_path: Path, mode: int) -> None:
    out = tmp_path / "shared"
    out.mkdir()
    out.chmod(mode)
    with pytest.raises(FaceoffError, match="writable by others"):
        init_key_pair(out)
    assert list(out.iterdir()) == []


def test_a_dangling_link_at_the_keys_path_is_refused_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "keys"
    out.mkdir(mode=0o700)
    (out / "faceoff-signing.key").symlink_to(tmp_path / "elsewhere")
    done = faceoff("keys", "init", "--out", str(out))
    assert done.returncode == Exit.REFUSED, done.stderr
    assert "Traceback" not in done.stderr and "a link is already there" in done.stderr
    assert not (tmp_path / "elsewhere").exists()


def test_run_takes_the_signing_key_from_a_flag_and_checks_it_first(tmp_path: Path) -> None:
    pair = init_key_pair(tmp_path / "keys")
    environ: dict[str, str] = {}
    assert use_signing_key(pair.private, environ).fingerprint == pair.fingerprint
    assert environ == {SIGNING_KEY_FILE_ENV: str(pair.private.resolve())}
    pair.private.chmod(0o644)
    done = faceoff("run", "no-such-matrix.toml", "--signing-key", str(pair.private))
    assert done.returncode == Exit.REFUSED and "readable by others" in done.stderr
