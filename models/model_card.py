"""Write the model card (README.md in the model folder) from the training summary and
the measured next-line exact match."""
from __future__ import annotations

import json
import platform
from pathlib import Path


def _runs_text(summary: dict) -> str:
    """The runs that made this model (one, or a first run and its continuations)."""
    own = (f"{summary['steps_done']} steps, {summary['tokens_seen'] / 1e6:.2f} M tokens "
           f"({summary['epochs_started']} pass(es) over the data started), "
           f"{summary['minutes']} minutes on `{summary['device']}` (torch {summary['torch']})"
           f"{' - stopped by the time budget' if summary['stopped_early'] else ''}")
    runs = summary.get("runs") or []
    if len(runs) < 2:
        return f"This model: {own}."
    lines = [f"This model was trained in {len(runs)} runs, each continuing the previous one "
             "(`inkling train --init-from FOLDER`, same tokenizer, new data order, a new "
             "warm-up and decay):", "",
             "| run | steps | tokens | peak lr | validation loss | device |", "|---|---|---|---|---|---|"]
    for i, r in enumerate(runs, 1):
        lines.append(f"| {i} | {r['steps']} | {r['tokens'] / 1e6:.2f} M | {r['lr']} | "
                     f"{r['validation_loss']:.3f} | {r['device']} |")
    lines += ["", f"The last run: {own}; {summary['tokens_total'] / 1e6:.2f} M tokens in all, "
              f"{summary['minutes_total']} minutes."]
    return "\n".join(lines)


def _model_datastore_text(model_dir: Path) -> str:
    """The model card's section on the folder's model datastore ("" without one)."""
    path = model_dir / "model_datastore.npz"
    if not path.is_file():
        return ""
    import numpy as np
    with np.load(path) as z:
        meta = json.loads(z["meta"].tobytes().decode())
        items, tokens = len(z["bounds"]) - 1, len(z["tokens"])
    s = meta["sampling"]
    return f"""## Model datastore

`model_datastore.npz` ({path.stat().st_size / 1e6:.1f} MB) holds what this model itself
writes, greedy, at {items:,} positions sampled uniformly from its training files (seed
{s['seed']}; prompts of {s['prefix_tokens']} tokens before the position and
{s['suffix_tokens']} after it, in the `{meta['fim_order']}` order; at most
{s['new_tokens']} new tokens, to the end of the line): {tokens:,} tokens with their
contexts. Retrieval drafting (`completion.draft: suffix`) searches it
(`completion.model_datastore: auto`). It is made by

```
inkling datastore model --from {meta['source']} --items {s['items']} --seed {s['seed']}
```

(it took {meta['seconds']:.0f} s where it was made) and records the fingerprint of these
weights: retraining the model in place makes it stale, and it is then skipped with a
warning until it is made again.

"""


def _disk_mb(model_dir: Path) -> tuple[float, float]:
    sizes = [p.stat().st_size for p in model_dir.glob("*.safetensors")]
    return sum(sizes) / 1e6, max(sizes) / 1e6


def write_model_card(model_dir: Path, evals: list[dict], command: str) -> Path:
    summary = json.loads((model_dir / "train_summary.json").read_text())
    cfg = json.loads((model_dir / "config.json").read_text())
    o = summary["options"]
    total_mb, largest_mb = _disk_mb(model_dir)
    rows = "\n".join(
        f"| {e['fim_order']} | {e['lines']} | {e['exact']} | {100 * e['exact_match']:.1f}% | "
        f"{e['latency_ms_p50']} |" for e in evals)
    held = "\n".join(f"- `{p}`" for p in summary["held_out_files"])
    card = f"""# inkling-tiny

The default model bundled with inkling: a small code model trained from scratch, on
this machine's CPU, on the Python standard library, so that inkling works offline out
of the box. It is a real model but a very small one: expect short, plausible
completions, not a large model's quality. Point `--model` (or the `model.path` option)
at any local Hugging Face Llama, Qwen2, Mistral, StarCoder2 or DeepSeek-Coder folder for
better suggestions.

## Size

| | |
|---|---|
| architecture | `transformers` `LlamaForCausalLM` (RoPE, grouped-query attention, tied embeddings) |
| parameters | {summary['parameters'] / 1e6:.2f} M |
| layers / hidden / MLP | {cfg['num_hidden_layers']} / {cfg['hidden_size']} / {cfg['intermediate_size']} |
| attention heads / key-value heads | {cfg['num_attention_heads']} / {cfg['num_key_value_heads']} |
| positions (config) / trained context | {cfg['max_position_embeddings']} / {o['seq_len']} tokens |
| vocabulary | {cfg['vocab_size']} (byte-level BPE) |
| weights | float16 safetensors, {total_mb:.1f} MB in all, largest shard {largest_mb:.1f} MB |

## Data

The Python standard library source of the interpreter that ran the recipe
(`sysconfig.get_paths()["stdlib"]`, Python {platform.python_version()} here), read in
sorted path order, without `site-packages`, `lib-dynload`, the test suites (`test/`,
`tests/`, `idle_test/` folders and `test_*.py` files), the build-specific
`_sysconfigdata*` module, files over 250 kB and generated charmap codec tables.
{summary['train_files']} files train the model; 2% of the files, those with the
smallest SHA-256 of their relative path, are held out:

{held}

The tokenizer (byte-level BPE, `tokenizers`) is trained on the training files, with
special tokens `<|endoftext|>`, `<|file_sep|>`, `<|fim_prefix|>`, `<|fim_suffix|>`,
`<|fim_middle|>`.

## Recipe

`inkling train` reproduces this folder (`inkling train --help` lists every option):
files are cut into chunks of about 3,000 characters at line ends; half the chunks become
fill-in-the-middle samples (the middle is the rest of a line from a cursor inside it, a
whole line, 2 to 8 lines, or any span up to 200 characters), half of those in
prefix-suffix-middle order and half in suffix-prefix-middle order, with prefix, suffix
and middle tokenized separately as the Engine does at a cursor. Samples are packed into
rows of {o['seq_len']} tokens. AdamW (betas 0.9/0.95, weight decay {o['weight_decay']}),
peak learning rate {o['lr']}, {o['warmup']} warm-up steps, then cosine decay to
{o['min_lr_ratio']} of the peak over the budget ({o['steps']} steps or {o['max_minutes']}
minutes, whichever runs out first), batch {o['batch_size']} x {o['seq_len']} tokens,
gradient clipping at 1.0, seed {o['seed']}.

{_runs_text(summary)}
The loss log (of the last run) is `training_log.tsv`, the curve `loss_curve.png`.

![loss curve](loss_curve.png)

## Results

Validation loss (held-out files, same sample mix): **{summary['validation_loss']:.3f}**
nats/token (final training loss {summary['final_train_loss']:.3f}).

Greedy next-line exact match on the held-out files: each sampled non-blank line is
removed (its indentation kept), inkling completes at the end of the indentation with
the rest of the file after the cursor, and the suggestion's first line must equal the
removed line exactly (trailing whitespace ignored).

| prompt order | lines | exact | exact match | latency p50 (ms, CPU) |
|---|---|---|---|---|
{rows}

Measured with:

```
{command}
```

The bundled model uses the `{json.loads((model_dir / 'inkling.json').read_text())['fim_order']}` order by default (`inkling.json`); the
`completion.fim_order` option picks the other. Both orders are measured with token
healing (the last token before the cursor is decoded again), which inkling does by
default.

{_model_datastore_text(model_dir)}## Limitations

The budget is in minutes, so how many steps fit depends on the machine: these runs
shared two CPU cores with other work and saw
{summary.get('tokens_total', summary['tokens_seen']) / 1e6:.1f} M tokens in all. At this
size and budget the model writes plausible Python shapes but rarely the exact line: it
is there so that everything works offline, and to measure cost. For quality, point
inkling at a real code model.
"""
    path = model_dir / "README.md"
    path.write_text(card)
    return path
