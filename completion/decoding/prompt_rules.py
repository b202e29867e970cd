"""The prompt's constraints around the monitor: the blank-line rule, then token healing."""
from __future__ import annotations

from inkling.completion.decoding.blank_line import BlankLine, line_ends
from inkling.completion.decoding.healing import Healing, healed_decode, token_texts


def with_prompt_rules(monitor, decode, runtime, prompt, fill_blank_lines: bool):
    """Wrap ``monitor`` in the rules ``prompt`` calls for; returns (state, decode).
    ``decode`` is wrapped to leave out healed text."""
    texts = token_texts(runtime)
    if fill_blank_lines and prompt.at_blank_line:
        monitor = BlankLine(line_ends(runtime, texts.texts), texts.texts, monitor,
                            indented=bool(prompt.line_prefix))
    if prompt.healed:
        monitor = Healing(texts, prompt.healed, monitor)
        decode = healed_decode(decode, prompt.healed)
    return monitor, decode
