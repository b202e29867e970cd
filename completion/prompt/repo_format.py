"""How a model family writes other files of the repository before the completed file's prompt
(``RepoFormat`` per family below, chosen by the FIM format the vocabulary has; Code Llama and a
model with no FIM tokens have none, so get no block)."""
from __future__ import annotations

from dataclasses import dataclass

from inkling.runtime.fim import added_tokens
from inkling.runtime.model_runtime import ModelRuntime


@dataclass(frozen=True)
class RepoFormat:
    family: str
    file_sep: str | None = None       # a special token before each file's path line
    repo_name: str | None = None      # a special token before the repository's name, once
    name_end: str = ""                # what ends the repository's name
    comment: str | None = None        # no special token: the path in this comment line

    def available(self, runtime: ModelRuntime) -> bool:
        """Whether the model's vocabulary has this format's special tokens as added tokens."""
        added = added_tokens(runtime.tokenizer)
        return all(t in added for t in (self.file_sep, self.repo_name) if t)

    def head_ids(self, repo: str, runtime: ModelRuntime) -> list[int]:
        """What opens the block: the repository's name where the format has one."""
        if not self.repo_name or not repo:
            return []
        return [runtime.token_id(self.repo_name), *runtime.encode(repo + self.name_end)]

    def file_ids(self, path: str, text: str, runtime: ModelRuntime) -> list[int]:
        """One file of the block, or with ``text`` empty the path line before the cursor file's."""
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
    """The repository format of the runtime's model family, or None where it has none."""
    family = runtime.fim.family if runtime.fim is not None else ""
    for fmt in _BY_FAMILY.get(family, ()):
        if fmt.available(runtime):
            return fmt
    return None
