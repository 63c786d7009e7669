"""Deterministic filler text: prose sentences and structured records.

Filler of n words is the first n words of a stream fixed by a key, so a longer
filler extends a shorter one and the token count grows with n. Generation is
bulk (one ``choices`` call) so a ~310K-token capacity-edge prompt takes tens of
milliseconds. The vocabulary holds no word that marks structured text (the
simulator treats prompts that mention JSON or hold a code fence as structured).
"""

from __future__ import annotations

import hashlib
import random

from faceoff.canonical import canonical_json

_WORDS = """
    river stone amber harbor lantern meadow copper signal orchard valley winter summer
    engine bridge market garden ledger window station canvas thunder shadow silver forest
    morning evening journey village island canyon compass mirror pillar quiet steady bright
    narrow gentle distant hollow ancient modern simple careful patient rapid silent golden
    north south east west harvest season anchor beacon circle corner harbor keeper factory
    library teacher student farmer builder painter sailor doctor pilot writer reader singer
    carries follows gathers measures repairs watches opens closes builds finds keeps sends
    water fire earth wind cloud rain snow light sound color number letter story answer
    question reason method result record report notice detail moment minute hour week month
    year century kingdom county city street road path trail field hill mountain shore ocean
    table chair door floor wall roof stair tower castle temple palace cottage cabin tent
    apple bread cheese honey salt pepper sugar butter milk coffee tea orange lemon cherry
    horse eagle falcon otter badger rabbit salmon sparrow heron beetle spider dolphin whale
    paper pencil ribbon thread needle button basket bucket hammer ladder shovel rope chain
    early late often never always seldom twice again almost nearly rather quite fairly
    under over between across around behind beyond within without toward along among
    green blue red yellow purple brown gray white black crimson violet scarlet indigo
    calm brave clever eager fierce humble proud wise young old tall short wide deep
    plain rough smooth sharp soft warm cool dry wet heavy light loud faint clear dim
    travel return arrive depart remain wander gather scatter follow lead carry lift lower
    balance pattern rhythm current spark flame ember ash dust sand clay marble granite
    glass crystal velvet linen cotton leather timber cedar maple willow birch pine oak
"""
VOCABULARY: tuple[str, ...] = tuple(dict.fromkeys(_WORDS.split()))


def rng_for(*key: object) -> random.Random:
    """A generator seeded by the sha256 of the canonical JSON of ``key``."""
    digest = hashlib.sha256(canonical_json([str(k) for k in key]).encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def derive_hex(length: int, *key: object) -> str:
    """``length`` hex characters fixed by ``key`` (nonces, canaries, markers)."""
    return hashlib.sha256(canonical_json([str(k) for k in key]).encode()).hexdigest()[:length]


def derive_int(bound: int, *key: object) -> int:
    return int(derive_hex(16, *key), 16) % bound


def word_stream(n: int, *key: object) -> list[str]:
    """The first ``n`` words of the stream fixed by ``key`` (prefix-stable)."""
    return rng_for("words", *key).choices(VOCABULARY, k=n)


def prose(n: int, *key: object) -> str:
    """``n`` words as sentences of 6–18 words."""
    words = word_stream(n, *key)
    lengths = rng_for("sentences", *key)
    sentences: list[str] = []
    start = 0
    while start < n:
        stop = min(n, start + lengths.randint(6, 18))
        sentence = " ".join(words[start:stop])
        sentences.append(sentence[:1].upper() + sentence[1:] + ".")
        start = stop
    return " ".join(sentences)


def records(n: int, *key: object) -> str:
    """``n`` words as one structured record per line, three words each."""
    words = word_stream(n, *key)
    lines = [
        f'{{"id": {i // 3}, "name": "{" ".join(words[i : i + 2])}", "tag": "{words[i + 2]}"}}'
        if i + 2 < n
        else " ".join(words[i:])
        for i in range(0, n, 3)
    ]
    return "\n".join(lines)


def split_at_depth(text: str, depth: float) -> tuple[str, str]:
    """Split ``text`` at a sentence end near ``depth`` (0 = start, 1 = end)."""
    cut = int(len(text) * depth)
    if 0 < cut < len(text):
        boundary = text.rfind(". ", 0, cut)
        cut = boundary + 2 if boundary >= 0 else 0
    return text[:cut], text[cut:]
