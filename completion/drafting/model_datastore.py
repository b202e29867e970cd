"""The model's own greedy continuations as a drafting source, since a small model agrees with itself
more than with its training code (docs/decisions/suffix-drafting.md); a store is written beside its
model (``inkling datastore model``) and refused by other weights."""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inkling.completion.errors import OptionError
from inkling.completion.progress import Progress
from inkling.completion.prompt.token_ids import TokenIds
from inkling.completion.drafting.suffix_index import StreamIndex

FILE_NAME = "model_datastore.npz"
CONTEXT_TOKENS = 24          # context kept before each continuation (the longest match used)
@dataclass(frozen=True)
class SampleOptions:
    items: int = 32768          # sampled positions
    prefix_tokens: int = 160    # prompt before the position
    suffix_tokens: int = 32     # prompt after it (fill-in-the-middle models)
    new_tokens: int = 16        # the most the model writes per position
    batch: int = 64
    seed: int = 0


@dataclass
class ModelDatastore:
    index: StreamIndex
    items: int
    tokens: int
    meta: dict
    seconds: float = 0.0

    def found(self, context: list[int]):
        return self.index.found(context)

    def nbytes(self) -> int:
        return self.index.nbytes()

    def summary(self) -> str:
        return (f"model datastore: {self.items} continuations of the model, {self.tokens} tokens, "
                f"{self.nbytes() / 2**20:.0f} MiB, loaded in {self.seconds:.1f} s")


def fingerprint(model_dir: Path) -> str:
    """sha256 over the weights and the tokenizer of the model folder ``model_dir``."""
    h = hashlib.sha256()
    files = sorted(model_dir.glob("*.safetensors")) + sorted(model_dir.glob("*.bin")) + \
        [model_dir / "tokenizer.json"]
    for f in files:
        if f.is_file():
            h.update(f.name.encode() + b"\0")
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def sample_positions(sequences: list[np.ndarray], n: int, seed: int) -> list[tuple[int, int]]:
    """``n`` (sequence, position) pairs, uniform over the tokens of ``sequences`` but the first."""
    lengths = np.array([len(s) for s in sequences], dtype=np.int64)
    usable = np.maximum(lengths - 1, 0)
    if usable.sum() == 0:
        raise OptionError("the model datastore needs text to sample from; the sources are empty")
    rng = np.random.default_rng(seed)
    which = rng.choice(len(sequences), size=n, p=usable / usable.sum())
    return [(int(s), 1 + int(rng.integers(usable[s]))) for s in which]


def build_model_datastore(runtime, sequences: list[np.ndarray], line_end_ids: frozenset[int],
                          options: SampleOptions = SampleOptions(),
                          progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, bounds) of the items: at ``options.items`` positions of ``sequences``, the last
    CONTEXT_TOKENS tokens and ``runtime``'s greedy continuation there (``line_of``)."""
    import torch  # lazy: torch is slow to import, and cli/datastore.py imports this module
    pad = 0
    items: list[np.ndarray] = []
    positions = sample_positions(sequences, options.items, options.seed)
    for b in range(0, len(positions), options.batch):
        prompts, contexts = [], []
        for s, p in positions[b:b + options.batch]:
            seq = sequences[s]
            prefix = seq[max(0, p - options.prefix_tokens):p].tolist()
            suffix = seq[p:p + options.suffix_tokens].tolist()
            prompts.append(fim_prompt(runtime, prefix, suffix))
            contexts.append(prefix[-CONTEXT_TOKENS:])
        width = max(len(x) for x in prompts)
        ids = torch.full((len(prompts), width), pad, dtype=torch.long)       # [b, width]
        mask = torch.zeros((len(prompts), width), dtype=torch.long)          # left padding
        for i, x in enumerate(prompts):
            ids[i, width - len(x):] = torch.tensor(x)
            mask[i, width - len(x):] = 1
        with torch.inference_mode():
            out = runtime.model.generate(input_ids=ids.to(runtime.device),
                                         attention_mask=mask.to(runtime.device),
                                         max_new_tokens=options.new_tokens, do_sample=False,
                                         pad_token_id=pad, eos_token_id=None)
        for ctx, row in zip(contexts, out[:, width:].tolist()):
            items.append(np.asarray(ctx + line_of(row, line_end_ids, runtime.stop_ids),
                                    dtype=np.int32))
        if progress:
            progress("the model writes continuations",
                     min(1.0, (b + options.batch) / len(positions)))
    bounds = np.zeros(len(items) + 1, dtype=np.int64)
    bounds[1:] = np.cumsum([len(x) for x in items])
    return np.concatenate(items), bounds


def fim_prompt(runtime, prefix: list[int], suffix: list[int]) -> list[int]:
    """The prompt the engine would build for a cursor between ``prefix`` and ``suffix``,
    the BOS first where the tokenizer adds one."""
    bos = [] if runtime.bos_id is None else [runtime.bos_id]
    if runtime.fim is None:
        return bos + list(prefix)
    return bos + runtime.fim.build(runtime.fim_order, prefix, suffix, TokenIds(runtime))


def line_of(generated: list[int], line_end_ids, stop_ids) -> list[int]:
    """``generated`` up to its first line end after other text (included), or its first stop."""
    out: list[int] = []
    for t in generated:
        if t in stop_ids:
            break
        out.append(t)
        if t in line_end_ids and any(x not in line_end_ids for x in out[:-1]):
            break
    return out


def save(path: Path, tokens: np.ndarray, bounds: np.ndarray, meta: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    dtype = np.uint16 if tokens.size == 0 or int(tokens.max()) < 2**16 else np.int32
    np.savez_compressed(tmp, tokens=tokens.astype(dtype), bounds=bounds,
                        meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
    tmp.replace(path)


def load(path: Path, model_dir: Path) -> ModelDatastore:
    """The store in ``path`` for ``model_dir``'s model; OptionError naming the file when it is
    missing, unreadable, corrupt or another model's."""
    t0 = time.perf_counter()
    try:
        with np.load(path) as z:
            tokens, bounds = z["tokens"].astype(np.int32), z["bounds"]
            meta = json.loads(z["meta"].tobytes().decode())
    except FileNotFoundError:
        raise OptionError(f"model datastore {path}: no such file") from None
    except (OSError, KeyError, ValueError) as exc:
        raise OptionError(f"model datastore {path} is unreadable ({exc})") from None
    if len(bounds) < 1 or bounds[-1] != len(tokens) or np.any(np.diff(bounds) < 0):
        raise OptionError(f"model datastore {path} is corrupt (its item bounds do not fit "
                          f"its {len(tokens)} tokens)")
    want = fingerprint(model_dir)
    if meta.get("fingerprint") != want:
        raise OptionError(f"model datastore {path} was written by another model (or other "
                          f"weights) than {model_dir}; rebuild it with `inkling datastore model`")
    seqs = [tokens[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    index = StreamIndex.of(seqs)
    return ModelDatastore(index, len(seqs), int(len(tokens)), meta, time.perf_counter() - t0)


def resolve(spec: str, model_dir: Path) -> Path | None:
    """The file ``completion.model_datastore`` names: None, ``model_dir``'s own (auto) or a path."""
    if spec == "none":
        return None
    if spec == "auto":
        own = model_dir / FILE_NAME
        return own if own.is_file() else None
    return Path(spec).expanduser()
