"""The constraints a prompt puts on decoding, around the analysis monitor's: the blank-line
rule where the cursor's line is blank (blank_line.py), then token healing where the prompt
gave a token back (healing.py). Each has a monitor state's interface and wraps the next."""
from __future__ import annotations

from inkling.completion.decoding.blank_line import BlankLine, line_ends
from inkling.completion.decoding.healing import Healing, healed_decode, token_texts


def with_prompt_rules(monitor, decode, runtime, prompt, fill_blank_lines: bool):
    """(state, decode): the state decoding starts from, ``monitor`` (the analysis monitor's,
    or None) inside the rules ``prompt`` (a prompt.builder.Prompt) calls for, and the decode
    function (ids -> text) that leaves out a healed token's text."""
    texts = token_texts(runtime)
    if fill_blank_lines and prompt.at_blank_line:
        monitor = BlankLine(line_ends(runtime, texts.texts), texts.texts, monitor,
                            indented=bool(prompt.line_prefix))
    if prompt.healed:
        monitor = Healing(texts, prompt.healed, monitor)
        decode = healed_decode(decode, prompt.healed)
    return monitor, decode
