"""Token healing: the prompt's last token is given back and decoding must re-emit its text.
A prompt cut at the cursor often ends in a token the model rarely saw there; ``Healing`` masks to
tokens covering the healed text, then hands over to the state it wraps (None without one)."""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
import torch

from inkling.completion.decoding.seams import Monitor
from inkling.completion.open_analysis import VOCABULARY


MASK_BYTES = 8 << 20    # the dense masks a table keeps: 55 at a 151,936-token vocabulary


class TokenTexts:
    """Each token id's text (once per tokenizer; special tokens "") and masks of the ids
    fitting a remaining text."""

    def __init__(self, texts: list[str], vocab_size: int):
        self.texts = texts
        self.vocab_size = max(vocab_size, len(texts))
        # ids by text, equal texts by id (a stable sort); the sorted texts are the same strings
        order = sorted((i for i, t in enumerate(texts) if t and "\ufffd" not in t),
                       key=texts.__getitem__)
        self._sorted_ids = np.array(order, dtype=np.int64)
        self._sorted_texts = [texts[i] for i in order]
        self._masks: dict[str, torch.Tensor] = {}
        self._overhangs: dict[str, list[tuple[int, str]]] = {}
        self._refusing: dict[tuple, torch.Tensor] = {}
        self._kept = max(16, MASK_BYTES // self.vocab_size)     # dense masks kept per table

    @classmethod
    def decoded(cls, tokenizer, vocab_size: int) -> "TokenTexts":
        """Every id of ``tokenizer`` decoded alone (in parallel), special tokens skipped."""
        n = tokenizer.get_vocab_size()
        return cls(tokenizer.decode_batch([[i] for i in range(n)]), vocab_size)

    @classmethod
    def of_vocabulary(cls, vocabulary, vocab_size: int) -> "TokenTexts":
        """The monitor's ``TokenVocabulary`` texts (each id decoded alone), special tokens
        left out: the same table as ``decoded`` without decoding again."""
        special = vocabulary.special
        return cls([t if not special[i] else "" for i, t in enumerate(vocabulary.texts)],
                   vocab_size)

    def mask(self, remaining: str) -> torch.Tensor:
        """bool [vocab]: tokens covering a prefix of ``remaining`` or all of it and more."""
        found = self._masks.get(remaining)
        if found is None:
            texts, ids = self._sorted_texts, []
            for k in range(1, len(remaining) + 1):                  # prefixes of remaining
                lo = bisect.bisect_left(texts, remaining[:k])
                ids.append(self._sorted_ids[lo:bisect.bisect_right(texts, remaining[:k], lo)])
            lo = bisect.bisect_left(texts, remaining)               # texts starting with it
            ids.append(self._sorted_ids[lo:bisect.bisect_left(texts, remaining + "\U0010ffff", lo)])
            allowed = torch.zeros(self.vocab_size, dtype=torch.bool)
            allowed[torch.from_numpy(np.concatenate(ids))] = True
            if len(self._masks) > self._kept:
                self._masks.clear()
            found = self._masks[remaining] = allowed
        return found

    def mask_refusing(self, remaining: str, rule, refuses) -> torch.Tensor:
        """``mask(remaining)`` less tokens whose overhang ``refuses`` (kept, as testing is slow)."""
        key = (remaining, rule)
        found = self._refusing.get(key)
        if found is None:
            found = self.mask(remaining)
            out = [i for i, extra in self.overhanging(remaining) if refuses(extra)]
            if out:
                found = found.clone()
                found[torch.tensor(out)] = False
            if len(self._refusing) > self._kept:
                self._refusing.clear()
            self._refusing[key] = found
        return found

    def overhanging(self, remaining: str) -> list[tuple[int, str]]:
        """(id, the text past ``remaining``) of each token covering ``remaining`` and more."""
        found = self._overhangs.get(remaining)
        if found is None:
            lo = bisect.bisect_right(self._sorted_texts, remaining)   # past remaining itself
            hi = bisect.bisect_left(self._sorted_texts, remaining + "\U0010ffff", lo)
            found = [(i, t[len(remaining):]) for t, i in zip(self._sorted_texts[lo:hi],
                                                              self._sorted_ids[lo:hi].tolist())]
            if len(self._overhangs) > 256:
                self._overhangs.clear()
            self._overhangs[remaining] = found
        return found


def token_texts(runtime) -> TokenTexts:
    """The runtime's TokenTexts, made once per model: from the monitor's vocabulary index
    where the monitor has read it (a large vocabulary takes most of a second to decode),
    else decoded."""
    found = runtime.attached.get("token_texts")
    if found is None:
        index = runtime.attached.get(VOCABULARY)
        found = TokenTexts.of_vocabulary(index[0], runtime.vocab_size) if index else \
            TokenTexts.decoded(runtime.tokenizer, runtime.vocab_size)
        runtime.attached["token_texts"] = found
    return found


@dataclass(frozen=True)
class Healing:
    texts: TokenTexts
    remaining: str               # healed text not yet re-emitted ("" once covered)
    inner: Monitor | None = None # the analysis monitor state, used after the healed text

    def mask(self, device=None):
        """bool [vocab]: tokens covering the healed text; once covered, the inner state's."""
        if self.remaining:
            refuses = getattr(self.inner, "refuses", None)
            m = self.texts.mask(self.remaining) if refuses is None else \
                self.texts.mask_refusing(self.remaining, self.inner.refusal, refuses)
            return m if device is None else m.to(device)
        return None if self.inner is None else self.inner.mask(device)

    def forced_text(self) -> str:
        """What the analysis monitor forces next (nothing while healing)."""
        if self.remaining or self.inner is None:
            return ""
        return self.inner.forced_text()

    def advance_token(self, token_id: int):
        """The state after ``token_id``: a Healing while text remains, else the inner one."""
        text = self.texts.texts[token_id] if token_id < len(self.texts.texts) else ""
        if not self.remaining:
            return None if self.inner is None else self.inner.advance_token(token_id)
        return self.advance(text)

    def advance(self, text: str):
        if not self.remaining:
            return None if self.inner is None else self.inner.advance(text)
        if len(text) < len(self.remaining):
            return Healing(self.texts, self.remaining[len(text):], self.inner)
        extra = text[len(self.remaining):]                     # the text went past it
        if self.inner is None or not extra:
            return self.inner
        return self.inner.advance(extra)


def healed_decode(decode, healed: str):
    """A decode function that leaves out the healed text (empty until it is covered)."""
    def run(ids: list[int]) -> str:
        text = decode(ids)
        return text[len(healed):] if len(text) >= len(healed) else ""
    return run
