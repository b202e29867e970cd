"""The drafts offered lately, by id, so that an accept names one."""
from __future__ import annotations

import itertools
from collections import OrderedDict

from inkling.completion.errors import DocumentError
from inkling.completion.result import Draft

KEEP = 256          # drafts remembered; an older id is unknown


class DraftBook:
    def __init__(self):
        self._drafts: OrderedDict[str, Draft] = OrderedDict()
        self._ids = itertools.count(1)

    def offer(self, text: str, logprob: float, tokens: int) -> Draft:
        draft = Draft(f"d{next(self._ids)}", text, logprob, tokens)
        self._drafts[draft.id] = draft
        while len(self._drafts) > KEEP:
            self._drafts.popitem(last=False)
        return draft

    def get(self, draft_id: str) -> Draft:
        try:
            return self._drafts[draft_id]
        except KeyError:
            raise DocumentError(f"unknown draft id {draft_id!r} (too old, or never offered)") \
                from None
