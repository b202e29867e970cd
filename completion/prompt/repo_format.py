"""How a model family writes other files of the repository before the file being completed.

* ``inkling`` (the bundled model, trained so; ``training/samples.py``) and Qwen2.5-Coder:
  ``<|file_sep|>{path}\\n{text}`` for each file, then ``<|file_sep|>{path}\\n`` of the
  cursor's file and its fill-in-the-middle prompt; Qwen2.5-Coder opens with
  ``<|repo_name|>{name}\\n``.
* StarCoder2: ``<repo_name>{name}<file_sep>{path}\\n{text}...``; StarCoder (1) writes
  ``<reponame>`` and ``<filename>`` instead.
* DeepSeek-Coder has no special tokens for it; its repository-level examples name each
  file in a comment line, ``#{path}``.
* Code Llama has no repository format: no context block is written for it.
"""
from __future__ import annotations

from dataclasses import dataclass

from inkling.runtime.model_runtime import ModelRuntime


@dataclass(frozen=True)
class RepoFormat:
    family: str
    file_sep: str | None = None       # a special token before each file's path line
    repo_name: str | None = None      # a special token before the repository's name, once
    name_end: str = ""                # what ends the repository's name
    comment: str | None = None        # no special token: the path in this comment line

    def available(self, runtime: ModelRuntime) -> bool:
        """Whether the model's vocabulary has this format's special tokens."""
        needed = [t for t in (self.file_sep, self.repo_name) if t]
        return all(runtime.tokenizer.token_to_id(t) is not None for t in needed)

    def head_ids(self, repo: str, runtime: ModelRuntime) -> list[int]:
        """What opens the block: the repository's name where the format has one."""
        if not self.repo_name or not repo:
            return []
        return [runtime.token_id(self.repo_name), *runtime.encode(repo + self.name_end)]

    def file_ids(self, path: str, text: str, runtime: ModelRuntime) -> list[int]:
        """One file of the block (``text`` ends with a line end), or with ``text`` empty the
        cursor's file's path line, which its fill-in-the-middle prompt follows."""
        if self.file_sep:                # "{path}\n{text}" is tokenized as one text
            return [runtime.token_id(self.file_sep), *runtime.encode(f"{path}\n{text}")]
        return runtime.encode(f"{self.comment}{path}\n{text}")


INKLING = RepoFormat("inkling", "<|file_sep|>")
QWEN = RepoFormat("qwen2", "<|file_sep|>", "<|repo_name|>", "\n")
STARCODER2 = RepoFormat("starcoder", "<file_sep>", "<repo_name>")
STARCODER1 = RepoFormat("starcoder", "<filename>", "<reponame>")
DEEPSEEK = RepoFormat("deepseek-coder", comment="#")

_BY_FAMILY = {"inkling": (INKLING,), "qwen2": (QWEN,), "starcoder": (STARCODER2, STARCODER1),
              "deepseek-coder": (DEEPSEEK,)}


def repo_format(runtime: ModelRuntime) -> RepoFormat | None:
    """The repository format of the runtime's model family, or None where it has none
    (Code Llama, a model without a fill-in-the-middle format)."""
    family = runtime.fim.family if runtime.fim is not None else ""
    for fmt in _BY_FAMILY.get(family, ()):
        if fmt.available(runtime):
            return fmt
    return None
