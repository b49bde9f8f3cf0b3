"""Evidence ids: which events of a task's traces an id names.

``corr:<n>``, ``ext:<n>`` or ``ev:<i>``, with ``rank<r>/`` before them when the
task has several traces; one spelling per event (ASCII digits, no leading
zeros), so that an answer cannot cite one event under many names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_RANK_PREFIX = re.compile(r"rank(0|[1-9][0-9]{0,5})/", re.ASCII)


class EvidenceIndex:
    """Which evidence ids name events of a task's traces: ``corr:<n>``, ``ext:<n>`` or
    ``ev:<i>``, with ``rank<r>/`` before them when the task has several traces."""

    def __init__(self, traces: Sequence[Any]) -> None:
        self.traces = list(traces)

    def events(self, evidence_id: str) -> frozenset[tuple[int, int]]:
        """The (trace, event index) pairs an id names; empty when it names none (an
        id spelled any other way than the canonical one names none)."""
        if not isinstance(evidence_id, str):
            return frozenset()
        rank, local = 0, evidence_id
        if len(self.traces) > 1:
            match = _RANK_PREFIX.match(evidence_id)
            if match is None:
                return frozenset()
            rank, local = int(match.group(1)), evidence_id[match.end() :]
            if rank >= len(self.traces):
                return frozenset()
        try:
            found = self.traces[rank].events_for_id(local)
        except (KeyError, ValueError):
            return frozenset()
        return frozenset((rank, int(index)) for index in found)
