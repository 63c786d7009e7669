"""Ed25519 key pairs: the operator signs with the private key, anyone verifies with the public one.
The same concept at another layer: ``flows.cli.keys``.

``faceoff keys init`` writes both: the private key as unencrypted PKCS#8 PEM, mode 0600,
and the public key as PEM (what ``openssl pkeyutl -verify -pubin`` reads) under a comment
line naming its fingerprint, the sha256 of the raw 32-byte key as ``sha256:<hex>``. A
record names its signer by that fingerprint and never holds a key. The private key is
read from the file the operator names (``FACEOFF_SIGNING_KEY_FILE`` or a flag); one that
others may read is refused, as ssh refuses an unprotected identity file.
"""

from __future__ import annotations

import base64
import binascii
import os
import stat
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from faceoff.canonical import sha256_hex
from faceoff.errors import FaceoffError

SIGNING_KEY_FILE_ENV = "FACEOFF_SIGNING_KEY_FILE"
PRIVATE_KEY_NAME = "faceoff-signing.key"
PUBLIC_KEY_NAME = "faceoff-signing.pub"
FINGERPRINT_PREFIX = "sha256:"
PEM_BEGIN = "-----BEGIN"


def fingerprint(public: Ed25519PublicKey) -> str:
    """``sha256:<hex>`` of the raw 32-byte public key."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return FINGERPRINT_PREFIX + sha256_hex(raw)


@dataclass(frozen=True)
class PublicKey:
    """A key a verifier trusts, and its fingerprint."""

    key: Ed25519PublicKey
    fingerprint: str

    @classmethod
    def of(cls, key: Ed25519PublicKey) -> PublicKey:
        return cls(key, fingerprint(key))

    def pem(self) -> str:
        """The key as PEM under a comment line naming its fingerprint."""
        body = self.key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode("ascii")
        return f"# faceoff Ed25519 public key {self.fingerprint}\n{body}"


@dataclass(frozen=True)
class SigningKey:
    """The operator's private key, read from its file; never written into a record."""

    private: Ed25519PrivateKey
    public: PublicKey

    @property
    def fingerprint(self) -> str:
        return self.public.fingerprint

    def sign(self, message: bytes) -> bytes:
        return self.private.sign(message)


@dataclass(frozen=True)
class KeyPairFiles:
    private: Path
    public: Path
    fingerprint: str


def init_key_pair(out_dir: Path) -> KeyPairFiles:
    """Write a new key pair into ``out_dir``, made 0700 when it is new; refuses to overwrite
    either file, to follow a link in a key's place, or to use a folder others may write to
    (they could swap the key for theirs)."""
    out = Path(out_dir)
    private_path, public_path = out / PRIVATE_KEY_NAME, out / PUBLIC_KEY_NAME
    for path in (private_path, public_path):
        if os.path.lexists(path):
            what = "a link" if path.is_symlink() else "a key file"
            raise FaceoffError(
                f"{what} is already there, and a key pair is never overwritten",
                where=str(path),
                fix="choose another --out folder, or move the old pair away first "
                "(bundles signed with it verify only with its public key)",
            )
    private = Ed25519PrivateKey.generate()
    public = PublicKey.of(private.public_key())
    _key_folder(out)
    _write_new(private_path, _private_pem(private), mode=0o600)
    _write_new(public_path, public.pem().encode("ascii"), mode=0o644)
    return KeyPairFiles(private_path, public_path, public.fingerprint)


def _key_folder(out: Path) -> None:
    """Create ``out`` 0700 (whatever the umask), or refuse an existing one that a group or
    everyone may write to."""
    if not os.path.lexists(out):
        out.mkdir(parents=True, mode=0o700)
        out.chmod(0o700)  # the umask may have narrowed it; nothing may widen it
        return
    try:
        mode = out.stat().st_mode
    except OSError as exc:  # a dangling link
        raise FaceoffError(f"cannot use it: {exc.strerror}", where=str(out),
                           fix="pass a folder as --out") from None  # fmt: skip
    if not stat.S_ISDIR(mode):
        raise FaceoffError("is not a folder", where=str(out), fix="pass a folder as --out")
    if mode & 0o022:
        raise FaceoffError(
            f"the folder is writable by others (mode {stat.S_IMODE(mode):04o}), who could "
            "swap the key pair for theirs",
            where=str(out),
            fix=f"run chmod go-w {out}, or pass a folder only you may write to",
        )


def _private_pem(private: Ed25519PrivateKey) -> bytes:
    return private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write_new(path: Path, data: bytes, *, mode: int) -> None:
    """Create ``path`` with ``mode`` from the start (never a moment readable by others)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), mode)  # the umask may have narrowed it
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def signing_key_file(environ: Mapping[str, str], flag: Path | None = None) -> Path | None:
    """The private key file a flag names, else ``FACEOFF_SIGNING_KEY_FILE``; None without one."""
    if flag is not None:
        return Path(flag)
    value = environ.get(SIGNING_KEY_FILE_ENV, "")
    return Path(value) if value else None


def use_signing_key(path: Path, environ: MutableMapping[str, str]) -> SigningKey:
    """The key a ``--signing-key`` flag names, checked now (one line if it will not do) and
    set in ``environ`` for the flow's processes, as ``FACEOFF_SIGNING_KEY_FILE`` sets it."""
    key = read_signing_key(path)
    environ[SIGNING_KEY_FILE_ENV] = str(Path(path).resolve())
    return key


def operator_signing_key(environ: Mapping[str, str], flag: Path | None = None) -> SigningKey | None:
    """The operator's key from the file a flag or the environment names; None without one."""
    path = signing_key_file(environ, flag)
    return None if path is None else read_signing_key(path)


def read_signing_key(path: Path) -> SigningKey:
    """The private key in ``path``: a regular file only its owner may read, Ed25519 PEM."""
    path = Path(path)
    mode = _regular_file_mode(path, "private key")
    if mode & 0o077:
        raise FaceoffError(
            f"the private key file is readable by others (mode {stat.S_IMODE(mode):04o})",
            where=str(path),
            fix=f"run chmod 600 {path}",
        )
    try:
        private = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise FaceoffError(
            f"not an unencrypted PEM private key: {exc}",
            where=str(path),
            fix="name the faceoff-signing.key that `faceoff keys init` wrote",
        ) from exc
    if not isinstance(private, Ed25519PrivateKey):
        raise FaceoffError(
            f"a {type(private).__name__}, not an Ed25519 key",
            where=str(path),
            fix="make one with `faceoff keys init`",
        )
    return SigningKey(private, PublicKey.of(private.public_key()))


def read_public_keys(path: Path) -> list[PublicKey]:
    """Every public key in ``path``: PEM blocks (a ``.pub`` that ``keys init`` wrote), or a
    trust file whose lines are ``<fingerprint> <PEM body on one line>`` (``#`` comments)."""
    path = Path(path)
    _regular_file_mode(path, "public key or trust file")
    text = path.read_text(encoding="utf-8", errors="replace")
    keys = _pem_keys(text, path) if PEM_BEGIN in text else _trust_lines(text, path)
    if not keys:
        raise FaceoffError(
            "holds no public key",
            where=str(path),
            fix="name a faceoff-signing.pub, or a trust file of '<fingerprint> <key>' lines",
        )
    return keys


def _pem_keys(text: str, path: Path) -> list[PublicKey]:
    blocks = text.split(PEM_BEGIN)[1:]
    return [_public_key(f"{PEM_BEGIN}{block}".encode("ascii", "replace"), path) for block in blocks]


def _trust_lines(text: str, path: Path) -> list[PublicKey]:
    keys = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            keys.append(_trust_line(fields, f"{path}:{number}"))
    return keys


def _trust_line(fields: list[str], where: str) -> PublicKey:
    if len(fields) != 2 or not fields[0].startswith(FINGERPRINT_PREFIX):
        raise FaceoffError(
            "not '<fingerprint> <key>'",
            where=where,
            fix="write the fingerprint and the one-line body of the signer's .pub file",
        )
    try:
        key = serialization.load_der_public_key(base64.b64decode(fields[1], validate=True))
    except (ValueError, binascii.Error, UnsupportedAlgorithm) as exc:
        raise FaceoffError(f"not a public key: {exc}", where=where) from exc
    public = _ed25519(key, where)
    if public.fingerprint != fields[0]:
        raise FaceoffError(
            f"the key's fingerprint is {public.fingerprint}, the line says {fields[0]}",
            where=where,
            fix="copy the line again from the signer's public key",
        )
    return public


def _public_key(pem: bytes, path: Path) -> PublicKey:
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise FaceoffError(f"not a PEM public key: {exc}", where=str(path)) from exc
    return _ed25519(key, str(path))


def _ed25519(key: object, where: str) -> PublicKey:
    if not isinstance(key, Ed25519PublicKey):
        raise FaceoffError(f"a {type(key).__name__}, not an Ed25519 key", where=where)
    return PublicKey.of(key)


def trust_line(public: PublicKey) -> str:
    """The key as one line of a trust file: its fingerprint and its DER in base64."""
    der = public.key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return f"{public.fingerprint} {base64.b64encode(der).decode('ascii')}"


def _regular_file_mode(path: Path, what: str) -> int:
    """The mode of ``path``, refusing anything but a regular file (a FIFO would hang a read)."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise FaceoffError(f"cannot read the {what}: {exc.strerror}", where=str(path)) from exc
    if not stat.S_ISREG(mode):
        raise FaceoffError(f"the {what} is not a regular file", where=str(path))
    return mode
