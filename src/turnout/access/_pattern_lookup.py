"""Literal-keyed lookup structures behind the pattern index (see `model_index` for the rules).

`Table` answers which patterns match a model at the top specificity without scanning every
pattern; `Nearest` answers which pattern shares the longest prefix with a model. Both are built
once and never change.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections import defaultdict
from typing import TYPE_CHECKING, NamedTuple

from turnout.access.patterns import PatternKind

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from turnout.access.patterns import ModelPattern, RoutePatterns

__all__ = ["Hit", "Nearest", "Table", "hits_of"]


class Hit(NamedTuple):
    """One pattern of one route; `position` is its index in the route's patterns."""

    entry: RoutePatterns
    pattern: ModelPattern
    position: int


def hits_of(entry: RoutePatterns) -> Iterator[Hit]:
    """The route's patterns as hits, a repeated pattern only once."""
    seen: set[str] = set()
    for index, pattern in enumerate(entry.patterns):
        if pattern.text not in seen:
            seen.add(pattern.text)
            yield Hit(entry, pattern, index)


class Table:
    """Literal-keyed lookup of patterns; answers the hits at the top specificity."""

    __slots__ = (
        "_any",
        "_exact",
        "_infix",
        "_infix_lengths",
        "_prefix",
        "_prefix_lengths",
        "_suffix",
        "_suffix_lengths",
    )

    def __init__(self, hits: Iterable[Hit]) -> None:
        self._exact: dict[str, list[Hit]] = defaultdict(list)
        self._prefix: dict[str, list[Hit]] = defaultdict(list)
        self._suffix: dict[str, list[Hit]] = defaultdict(list)
        self._infix: dict[int, dict[str, list[Hit]]] = defaultdict(lambda: defaultdict(list))
        self._any: list[Hit] = []
        for hit in hits:
            literal, kind = hit.pattern.literal, hit.pattern.kind
            if kind is PatternKind.EXACT:
                self._exact[literal].append(hit)
            elif kind is PatternKind.PREFIX:
                self._prefix[literal].append(hit)
            elif kind is PatternKind.SUFFIX:
                self._suffix[literal].append(hit)
            elif kind is PatternKind.INFIX:
                self._infix[len(literal)][literal].append(hit)
            else:
                self._any.append(hit)
        self._prefix_lengths = _lengths(self._prefix)
        self._suffix_lengths = _lengths(self._suffix)
        self._infix_lengths = tuple(sorted(self._infix, reverse=True))

    def lookup(self, model: str) -> list[Hit]:
        """The hits of the most specific patterns matching `model` (lower case)."""
        exact = self._exact.get(model)
        if exact:
            return list(exact)
        size = len(model)
        best, found = -1, list[Hit]()
        for length in self._prefix_lengths:
            if length <= size and (hits := self._prefix.get(model[:length])):
                best, found = length, list(hits)
                break
        for length in self._suffix_lengths:
            if length < best:
                break
            if length <= size and (hits := self._suffix.get(model[size - length :])):
                best, found = _merge(best, found, length, hits)
                break
        for length in self._infix_lengths:
            if length < best:
                break
            if length <= size and (hits := self._infix_hits(model, length)):
                best, found = _merge(best, found, length, hits)
                break
        if best < 0 and self._any:
            best, found = _merge(best, found, 0, self._any)
        return found

    def _infix_hits(self, model: str, length: int) -> list[Hit]:
        bucket = self._infix[length]
        windows = len(model) - length + 1
        if len(bucket) <= windows:
            return [hit for literal, hits in bucket.items() if literal in model for hit in hits]
        seen = {model[start : start + length] for start in range(windows)}
        return [hit for literal in seen if literal in bucket for hit in bucket[literal]]


def _lengths(by_literal: dict[str, list[Hit]]) -> tuple[int, ...]:
    return tuple(sorted({len(literal) for literal in by_literal}, reverse=True))


def _merge(best: int, found: list[Hit], length: int, hits: Sequence[Hit]) -> tuple[int, list[Hit]]:
    if length > best:
        return length, list(hits)
    return best, [*found, *hits]


class Nearest:
    """Pattern texts in sorted order, with a range-minimum table over their closeness ranks.

    The texts sharing the longest prefix with a model form one run of the sorted list, found
    by bisection; the sparse table answers the best of any run in two look-ups.
    """

    __slots__ = ("_levels", "_ranked", "_texts")

    def __init__(self, hits: Iterable[Hit]) -> None:
        by_text: dict[str, Hit] = {}
        for hit in hits:
            held = by_text.get(hit.pattern.text)
            if held is None or _closeness(hit) < _closeness(held):
                by_text[hit.pattern.text] = hit
        self._texts = sorted(by_text)
        self._ranked = sorted(by_text.values(), key=_closeness)
        rank = {hit.pattern.text: position for position, hit in enumerate(self._ranked)}
        level = [rank[text] for text in self._texts]
        self._levels = [level]
        width = 1
        while 2 * width <= len(self._texts):
            level = [min(pair) for pair in zip(level, level[width:], strict=False)]
            self._levels.append(level)
            width *= 2

    def find(self, model: str) -> Hit | None:
        """The nearest pattern to `model` (lower case), or None without patterns."""
        texts = self._texts
        if not texts:
            return None
        at = bisect_left(texts, model)
        shared = max(_common_prefix(model, text) for text in texts[max(at - 1, 0) : at + 1])
        stem = model[:shared]
        start = bisect_left(texts, stem)
        return self._ranked[self._best_rank(start, self._run_end(stem, start))]

    def _run_end(self, stem: str, start: int) -> int:
        texts = self._texts
        if not stem:
            return len(texts)
        if ord(stem[-1]) < sys.maxunicode:
            return bisect_left(texts, stem[:-1] + chr(ord(stem[-1]) + 1))
        end = start
        while end < len(texts) and texts[end].startswith(stem):
            end += 1
        return end

    def _best_rank(self, start: int, end: int) -> int:
        level = (end - start).bit_length() - 1
        row = self._levels[level]
        return min(row[start], row[end - (1 << level)])


def _common_prefix(a: str, b: str) -> int:
    count = 0
    for left, right in zip(a, b, strict=False):
        if left != right:
            break
        count += 1
    return count


def _closeness(hit: Hit) -> tuple[bool, int, str, str]:
    specificity = hit.pattern.specificity
    return (not specificity.is_exact, -specificity.literals, hit.entry.route, hit.pattern.text)
