"""The KV pool in blocks, with prefix caching on whole blocks of the token vector.

A full block of prompt tokens is identified by a hash chained over every block
before it, so a prompt whose first block differs (a nonce first) shares nothing,
while a repeated prefix (turn 2 of a session) finds its blocks already computed.
Blocks are counted, not stored: a sequence holds shared (cached) blocks by hash and
private blocks by number. Cached blocks nobody holds stay reusable until evicted,
least recently released first; like vLLM, they count as free.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field


def block_hashes(tokens: Sequence[int], block_size: int) -> list[int]:
    """One chained hash per full block (a partial last block is never shared)."""
    hashes = []
    previous = 0
    for start in range(0, len(tokens) - block_size + 1, block_size):
        previous = hash((previous, tuple(tokens[start : start + block_size])))
        hashes.append(previous)
    return hashes


@dataclass
class BlockTable:
    """The blocks one sequence holds."""

    shared: list[int] = field(default_factory=list)  # cached block hashes, in prompt order
    private: int = 0

    @property
    def count(self) -> int:
        return len(self.shared) + self.private


class BlockPool:
    def __init__(self, num_blocks: int, block_size: int, *, prefix_caching: bool) -> None:
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.prefix_caching = prefix_caching
        self.free = num_blocks  # never used, or evicted
        self.refs: dict[int, int] = {}  # cached block hash -> holders
        self.evictable: OrderedDict[int, None] = OrderedDict()  # cached, held by nobody

    @property
    def available(self) -> int:
        return self.free + len(self.evictable)

    @property
    def usage(self) -> float:
        return 1.0 - self.available / self.num_blocks

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    def cached_prefix(self, hashes: Sequence[int]) -> int:
        """How many leading blocks of ``hashes`` are cached."""
        if not self.prefix_caching:
            return 0
        count = 0
        for block in hashes:
            if block not in self.refs:
                break
            count += 1
        return count

    def hold_cached(self, table: BlockTable, hashes: Sequence[int]) -> None:
        for block in hashes:
            self.refs[block] += 1
            self.evictable.pop(block, None)
            table.shared.append(block)

    def grow(self, table: BlockTable, tokens: int) -> bool:
        """Make ``table`` hold enough blocks for ``tokens``; False when the pool is short."""
        need = self.blocks_for(tokens) - table.count
        if need <= 0:
            return True
        if need > self.available:
            return False
        while self.free < need:
            self.refs.pop(self.evictable.popitem(last=False)[0])
            self.free += 1
        self.free -= need
        table.private += need
        return True

    def promote(self, table: BlockTable, block: int) -> None:
        """A private block just filled with prompt tokens becomes shareable under ``block``."""
        if not self.prefix_caching or table.private == 0:
            return
        table.private -= 1
        if block in self.refs:  # computed twice concurrently: keep one copy
            self.free += 1
            self.refs[block] += 1
            self.evictable.pop(block, None)
        else:
            self.refs[block] = 1
        table.shared.append(block)

    def release(self, table: BlockTable) -> None:
        self.free += table.private
        for block in reversed(table.shared):  # a prefix's tail is evicted before its head
            self.refs[block] -= 1
            if self.refs[block] == 0:
                self.evictable[block] = None
        table.shared.clear()
        table.private = 0
