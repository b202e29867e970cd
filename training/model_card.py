"""Write the model card (README.md) from the training summary, loss log and ``evaluation.json``."""
from __future__ import annotations

import json
import platform
from pathlib import Path

import numpy as np

from inkling.training.loss_projection import trend

PROJECTED_LOSS = 3.2          # the loss the card projects the tokens for

# the card's training-throughput section, as measured (its text says where and how)
THROUGHPUT = """| configuration | forward (ms) | backward (ms) | optimizer (ms) | tokens/s |
|---|---|---|---|---|
| the earlier recipe: 2 threads, AdamW `foreach` (its card: about 830 tokens/s on a quieter machine) | 1,820-3,773 | 3,698-8,553 | 41-2,627 | 274-737 |
| 2 threads, fused AdamW | 2,677-3,374 | 4,898-6,696 | 29-698 | 382-537 |
| 1 thread, fused AdamW (this recipe's choice under load) | 1,361-1,923 | 2,662-4,449 | 9-17 | 681-1,015 |
| 1 thread, fused AdamW, chunked cross-entropy (1,024 rows a chunk) | 1,778 | 3,989 | - | 710 |
| 1 thread, a lean torch twin of the model (`models/lean_llama.py`, identical logits) | 2,370-3,352 | 4,112-6,151 | 9-15 | 431-632 |
| 1 thread, `torch.compile` of the Hugging Face model (92 s to compile) | 1,707-2,734 | 3,380-3,510 | - | 670-785 |
| a later machine (AMD EPYC, AVX-512 with AVX512_BF16), quiet: 2 threads, float32 | 583-681 | 1,445-1,489 | 8-10 | 1,881-2,011 |
| the same, 1 thread, float32 | 1,034-1,038 | 2,199-2,311 | 8 | 1,220-1,263 |
| the same, 2 threads, bfloat16 autocast (`--amp auto`, this recipe's choice there) | 465-700 | 902-1,281 | 7-11 | 2,056-2,981 |
| the same, 1 thread, bfloat16 autocast | 779-813 | 1,427-1,543 | 8 | 1,732-1,850 |

Measured at normal priority while other sessions' benchmarks and tests ran on the same two
cores (load average 4 to 6), each row over several runs interleaved with the others; the
best single figure is `inkling train --init-from models/inkling-tiny --profile-steps 3
--threads 1` (1,015 tokens/s: data 0%, forward 34%, backward 66%, optimizer 0.3%). What
decides the rate on this machine is the CPU share: with other work on both cores one thread
does more than two (two threads wait on each other when either is preempted), and at
`nice -n 19` the run takes only what is left (75-400 tokens/s while other sessions worked;
`--threads -1` re-measures 1 against 2 threads every 100 steps and keeps the faster).
Compiling, chunking the cross-entropy and a leaner model did not beat the noise; the fused
optimizer removed the one part that was not matrix arithmetic (the step is about 6 GFLOP per
1,000 tokens, at roughly 40% of one core's AVX2 peak). bfloat16 was not used there: that CPU
had no native bfloat16 arithmetic. A later machine has it (AVX512_BF16): there bfloat16
autocast of the forward and backward (float32 weights, optimizer and loss) makes about 1.5
times the tokens a second at one thread and at two (`inkling train --init-from
models/inkling-tiny --profile-steps 4 --threads N --amp off|bf16`, two rounds each,
training paused), and `--amp auto` (the default) takes it wherever the CPU has bfloat16
instructions (AVX512_BF16 or AMX) or on CUDA; validation losses are computed in float32
whatever trains, so they compare across runs.
Time a step on another machine with
`inkling train --profile-steps 5 [--threads N] [--compile true] [--amp off|bf16]`."""


def _fmt_loss(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def _runs_table(summary: dict) -> str:
    runs = summary.get("runs") or []
    lines = ["| run | how it started | steps | tokens | peak lr | validation loss at its start | "
             "at its end | best (step) | held-out package | tokens/s | device |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(runs, 1):
        kind = {"new": "from scratch", "continued": "from run " + str(i - 1) + "'s weights "
                "(new AdamW moments, new warm-up)", "carried": "from run " + str(i - 1) +
                "'s checkpoint (its AdamW moments carried, new warm-up)"}.get(r.get("kind"),
                                                       "from scratch" if i == 1 else
                                                       f"from run {i - 1}'s weights")
        tps = r.get("tokens_per_s")
        best = (f"{_fmt_loss(r.get('best_validation_loss'))} ({r.get('best_step')})"
                if r.get("best_validation_loss") is not None else "-")
        lines.append(f"| {i} | {kind} | {r.get('steps')} | {(r.get('tokens') or 0) / 1e6:.2f} M | "
                     f"{r.get('lr')} | {_fmt_loss(r.get('start_validation_loss'))} | "
                     f"{_fmt_loss(r.get('validation_loss'))} | {best} | "
                     f"{_fmt_loss(r.get('validation_loss_package'))} | "
                     f"{'-' if not tps else f'{tps:.0f}'} | {r.get('device')} |")
    return "\n".join(lines)


def _model_datastore_text(model_dir: Path) -> str:
    """The model card's section on the folder's model datastore ("" without one)."""
    path = model_dir / "model_datastore.npz"
    if not path.is_file():
        return ""
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


def _evals_text(evals: list[dict] | None, command: str, order: str) -> str:
    if not evals:
        return ("Next-line exact match has not been measured on these weights yet: "
                "`inkling evaluate --write-card` measures it and rewrites this card.")
    names = {"stdlib": "held-out stdlib files", "package": "held-out package (toolz 1.0.0)",
             "tuning": "tuning set (held-out stdlib files and toolz 1.0.0)",
             "reporting": "reporting set (pinned packages, never tuned on)"}
    rows = "\n".join(
        f"| {names.get(e.get('held_out', 'stdlib'), e.get('held_out'))} | {e['fim_order']} | "
        f"{e.get('decoder', 'greedy')} | "
        f"{e['lines']} | {e['exact']} | {100 * e['exact_match']:.1f}% | {e['latency_ms_p50']} |"
        for e in evals)
    return f"""Next-line exact match: each sampled non-blank line (40 a file, seed 0) is
removed (its indentation kept), inkling completes at the end of the indentation with the
rest of the file after the cursor, one draft asked as an invoked completion asks, and the
suggestion's first line must equal the removed line exactly (trailing whitespace ignored).
The decoder is the options' (`beam`, beam search of width 8 whose best drafts are reread
left to right with the two lines after them, by default; `greedy` takes the likeliest token
each step: `inkling evaluate --decoder greedy`).

| held out | prompt order | decoder | lines | exact | exact match | latency p50 (ms, CPU) |
|---|---|---|---|---|---|---|
{rows}

Measured with:

```
{command or 'inkling evaluate --write-card'}
```

The bundled model uses the `{order}` order by default (`inkling.json`); the
`completion.fim_order` option picks the other. Both orders are measured with token
healing (the last token before the cursor is decoded again), which inkling does by
default."""


def _projection_text(model_dir: Path) -> str:
    """What more tokens would give, from the loss log (``loss_projection``)."""
    log = model_dir / "training_log.tsv"
    std, pkg = trend(log, "val_loss"), trend(log, "val_loss_pkg")
    if std is None:
        return ""
    def line(t, name):
        to = t.tokens_for(PROJECTED_LOSS)
        reach = (f"it would reach {PROJECTED_LOSS} at about {to / 1e6:,.0f} M tokens"
                 if to is not None else "it does not fall")
        anneal = (f" The anneal after it reached {t.final_loss:.3f} at "
                  f"{t.final_tokens / 1e6:.1f} M tokens, "
                  f"{t.loss_at(t.final_tokens) - t.final_loss:.3f} below the line there."
                  if t.annealed else "")
        return (f"- {name}: {t.per_doubling:.3f} nats per doubling of the tokens ({t.points} "
                f"evaluations of run {t.run}, {t.first_tokens / 1e6:.1f} M to "
                f"{t.last_tokens / 1e6:.1f} M tokens over all runs); twice the tokens would "
                f"give about {t.loss_at(2 * t.last_tokens):.3f}; {reach}.{anneal}")
    rows = [line(std, "held-out standard library")]
    if pkg is not None:
        rows.append(line(pkg, "held-out package"))
    return ("What more tokens would give: a straight line of the validation loss against the "
            "logarithm of the tokens seen, through the last run's evaluations at its "
            "constant learning rate from its highest on (a run that warms up again climbs "
            "first, and its way back down makes the line steeper than more tokens alone "
            "would; a model this small flattens sooner; the anneal at the end of a budget "
            "gains more, quoted apart):\n\n" + "\n".join(rows)
            + "\n\n")


def _schedule_text(summary: dict) -> str:
    sched = summary.get("schedule")
    if not sched:
        return ""
    segs = ", ".join(f"from step {int(a)} at {lr0:.3g} to step {int(b)}"
                     for a, lr0, b in sched["segments"])
    pos = summary.get("data_position", {})
    return (f"The last run's schedule: warm-up over {sched['warmup']} steps to {sched['peak']:g}, "
            f"then cosine segments to the floor {sched['floor']:g} ({segs}); it stood at step "
            f"{summary.get('step')} when these weights were written, at data epoch "
            f"{pos.get('epoch')} row {pos.get('cursor')} (data fingerprint "
            f"`{pos.get('fingerprint')}`). `inkling train --init-from models/inkling-tiny` "
            "continues from these weights as a new run: it reads this position from "
            "`train_summary.json` and goes on from there when the data is the same (same "
            "fingerprint), else it starts the next epoch's order; the AdamW moments start at "
            "zero and the learning rate warms up again.")


def _early_runs_note(runs: list[dict]) -> str:
    old = [i for i, r in enumerate(runs, 1) if "kind" not in r]
    if not old:
        return ""
    names = ' and '.join(map(str, old)) if len(old) < 3 else ', '.join(map(str, old))
    return (f". Run{'s' if len(old) > 1 else ''} {names} trained on the "
            "standard library alone, with the earlier recipe (a schedule over steps or minutes, "
            "whichever ran out first, and no checkpoints)")

# the card's alternative-drafts section, as measured on this model
ALTERNATIVES = """Invoked completions show three drafts. The alternatives to the lead draft were often a
fragment (`   if`, ` #`): they ended within the lead's lines **and tokens**, cut at their last
whole word, so behind a short lead they stopped after a word or two. Three remedies were
measured on retype traces of the held-out standard-library files and of toolz (843
completions, `superposed`, k = 3; `python benchmarks/alternatives.py`; fragments: a shown
alternative that is a bare word or under 4 characters where the line is not), on the
step-7276 weights of run 3:

| alternatives | first draft right | one of the drafts right | an alternative right | drafts shown | fragments | closest draft | latency p50 |
|---|---|---|---|---|---|---|---|
| the lead's extent (before) | 7.7% | 10.0% | 2.3% | 2.20 | 10.8% | 0.320 | 1.00 |
| **a floor of 16 tokens (kept)** | 7.7% | **10.4%** | **2.7%** | 2.35 | **4.9%** | **0.335** | 1.13 |
| a floor of 8 tokens | 7.7% | 10.2% | 2.5% | 2.28 | 6.2% | 0.330 | 1.00 |
| a floor of 48 tokens (to the line's end) | 7.7% | 10.4% | 2.7% | 2.36 | 4.7% | 0.334 | 1.17 |
| floor 16, later tokens sampled at 0.5 | 7.1% | 9.8% | 2.7% | 2.37 | 4.4% | 0.332 | 1.30 |
| floor 16, sampled at 1.0 | 7.2% | 9.7% | 2.5% | 2.32 | 4.4% | 0.324 | 1.35 |
| floor 16, pruned 1 nat a token below the lead | 7.7% | 10.0% | 2.3% | 1.98 | 5.0% | 0.324 | 1.18 |
| floor 16, pruned 2 nats below | 7.7% | 10.4% | 2.7% | 2.29 | 5.1% | 0.332 | 1.19 |
| no floor, sampled at 1.0 | 7.3% | 9.5% | 2.1% | 2.19 | 10.4% | 0.313 | 1.04 |

The **length floor** is kept (`completion.alternative_min_tokens`, 16 by default): the
alternatives still end within the lead's lines, but not under 16 tokens, and one that runs
past the lead's length is ranked by its log-probability a token over the lead's length
(as it was ranked before), so the first draft is the same; half as many fragments, more
right lines among the drafts, for 13% more time on an invoked completion (automatic
completions decode one draft and do not change). **Sampling** the alternatives' later
tokens (`completion.alternative_temperature`) makes them less often right, and a sampled
alternative that scores above the lead displaces a better first draft; **pruning** those
far less likely than the lead (`completion.alternative_prune`) only shows fewer. Both stay
available, off by default: a larger model may rank them otherwise.

Again on the step-1400 weights of run 4 (`--variants floor=0,base,floor=48,temperature=1.0,
prune=1.0`): the first draft right 8.8% without the floor and 8.9% with it, one of the
drafts 10.8% and **11.4%**, an alternative 2.0% and 2.5%, fragments 11.5% and **5.5%**,
closest 0.332 and 0.346, latency p50 1.14 times; a floor of 48 the same as 16 at 1.17;
sampling at 1.0 11.0% (1.30 times), pruning at 1 nat 10.7%. On the step-4688 weights of run
5 (`results/alternatives_step4688.txt`): the first draft right 8.7% in every variant, one
of the drafts 10.9% without the floor and **11.4%** with it, an alternative 2.3% and 2.7%,
fragments 8.7% and **4.9%**, closest 0.340 and 0.353, latency p50 1.08 times; a floor of
48 the same as 16; sampling at 1.0 11.2% (1.24 times), pruning at 1 nat 11.2% with fewer
shown (2.00 against 2.33). On the step-3700 weights of run 8
(`results/alternatives_run8.txt`): the first draft right 9.8% in every variant but sampling
(9.6%), one of the drafts 11.9% without the floor and **12.1%** with it, an alternative 2.0%
and 2.3%, fragments 10.8% and **5.9%**, closest 0.353 and 0.367, latency p50 1.11 times; a
floor of 48 the same as 16; sampling at 1.0 11.3% (1.33 times), pruning at 1 nat 11.6% with
fewer shown (2.00 against 2.36). With greedy's own draft as superposed's lead and the two best
mixed drafts beside it (`results/alternatives_greedy_lead.txt`, the same weights): the first
draft right 9.4% with the floor and 9.5% without, one of the drafts **12.8%** and 12.6%, an
alternative 3.4% and 3.1%, fragments **7.5%** and 12.1%, closest 0.389 and 0.377, latency p50
1.05 times; a floor of 48 the same as 16 at 1.13; sampling at 1.0 12.2% (1.25 times), pruning
at 1 nat 12.3% with fewer shown (1.85 against 2.35). The floor stays.

**Beam search** (`completion.decoder beam`, the default since; `completion/decoding/beam.py`)
decodes the likeliest whole lines instead of the likeliest next tokens, 4 hypotheses a step
ranked by log-probability over length ** 0.5. On the card's lines (`results/beam.txt`, the
run-8 weights) its first draft is right at 11.9% of the standard-library lines and 6.8% of
toolz's against greedy's 10.2% and 5.6%, one of its three at 15.4% and 8.8%, at 1.2 and 1.4
times greedy's p50; a width of 8 gives 13.0% and 7.0% (one of three: 17.3% and 10.8%) at 1.5
to 1.8 times, 12 and 16 no more (12.8%, `results/beam_wide.txt`); a length penalty of 0 (the
sum) 11.7% and 7.4%, of 1 (the mean) 11.0% and 6.5%. On the retype traces above
(`results/alternatives_beam.txt`): the first draft right 12.3% against superposed's 11.0%,
one of the drafts 16.0% against 14.5%, at 0.76 times its p50 but 1.6 times its p95 (a block
searched to its end), with fewer drafts shown (2.02 against 2.32), more of them fragments
(18.0% against 6.6%: a short line is a whole line to beam search) and a closest draft of
0.369 against 0.403.

**Rereading** (`completion.rereadLines 2`, the default since, with width 8;
`completion/decoding/rereading.py`) scores the beam's best drafts again with the same
model read plainly left to right, the draft's line and the two lines after it given the
768 tokens before: a small fill-in-the-middle model makes little use of the suffix, and
its likeliest line often does not lead into the next. With it, the syntax guard rejects
what Python's compiler rejects though tree-sitter parses it (a keyword argument repeated,
a positional argument after a keyword one, a `from __future__` import below other code)
and a draft that makes its line the line above over again is not shown. On the card's
lines (`results/rereading.txt`, the run-8 weights) the first draft is right at **15.6%** of
the standard-library lines and **10.1%** of toolz's (width 8 without rereading 14.3% and
7.0%, width 4 13.2% and 6.8%; greedy 10.2% and 5.6%), at 3.0 and 3.4 times greedy's p50;
a block completion is searched 4 wide (`completion.blockBeamWidth`: 8 took the traces' p95
to a second), which gives the table's 15.4% and 9.0%."""


def write_model_card(model_dir: Path, evals: list[dict] | None, command: str) -> Path:
    """The card; ``evals`` None takes ``evaluation.json``'s where it measured these weights."""
    summary = json.loads((model_dir / "train_summary.json").read_text())
    cfg = json.loads((model_dir / "config.json").read_text())
    order = json.loads((model_dir / "inkling.json").read_text())["fim_order"]
    evals, command = _measured(model_dir, summary, evals, command)
    card = "".join((
        _intro_section(summary), _size_section(model_dir, summary, cfg), _data_section(summary),
        _samples_section(summary["options"]), _recipe_section(summary), _runs_section(summary),
        _results_section(model_dir, summary, _evals_text(evals, command, order)),
        f"## Alternative drafts\n\n{ALTERNATIVES}\n\n## Training throughput\n\n{THROUGHPUT}\n\n",
        _model_datastore_text(model_dir), _limitations_section(summary)))
    path = model_dir / "README.md"
    path.write_text(card)
    return path


def _measured(model_dir: Path, summary: dict, evals: list[dict] | None,
              command: str) -> tuple[list[dict] | None, str]:
    """(the card's next-line exact match, its command): ``evals``, saved, else the saved ones."""
    eval_path = model_dir / "evaluation.json"
    stamp = {"tokens_total": summary.get("tokens_total"), "step": summary.get("steps_done")}
    if evals is not None:
        eval_path.write_text(json.dumps({"weights": stamp, "command": command,
                                         "results": evals}, indent=2) + "\n")
    elif eval_path.is_file():
        saved = json.loads(eval_path.read_text())
        if saved.get("weights") == stamp:
            evals, command = saved["results"], saved.get("command", command)
    return evals, command


def _intro_section(summary: dict) -> str:
    pkgs = summary.get("packages") or []
    return f"""# inkling-tiny

The default model bundled with inkling: a small code model trained from scratch, on
this machine's CPU, on the Python standard library{' and the source of ' + str(len(pkgs)) + ' pinned third-party packages' if pkgs else ''},
so that inkling works offline out of the box. It is a real model but a very small one:
expect short, plausible completions, not a large model's quality. Point `--model` (or the
`model.path` option) at any local Hugging Face Llama, Qwen2, Mistral, StarCoder2 or
DeepSeek-Coder folder for better suggestions.

"""


def _size_section(model_dir: Path, summary: dict, cfg: dict) -> str:
    o = summary["options"]
    total_mb, largest_mb = _disk_mb(model_dir)
    return f"""## Size

| | |
|---|---|
| architecture | `transformers` `LlamaForCausalLM` (RoPE, grouped-query attention, tied embeddings) |
| parameters | {summary['parameters'] / 1e6:.2f} M |
| layers / hidden / MLP | {cfg['num_hidden_layers']} / {cfg['hidden_size']} / {cfg['intermediate_size']} |
| attention heads / key-value heads | {cfg['num_attention_heads']} / {cfg['num_key_value_heads']} |
| positions (config) / trained context | {cfg['max_position_embeddings']} / {o['seq_len']} tokens |
| vocabulary | {cfg['vocab_size']} (byte-level BPE) |
| weights | float16 safetensors, {total_mb:.1f} MB in all, largest shard {largest_mb:.1f} MB |

"""


def _data_section(summary: dict) -> str:
    held = "\n".join(f"- `{p}`" for p in summary["held_out_files"])
    pkg_text = _packages_text(summary)
    return f"""## Data

The Python standard library source of the interpreter that ran the recipe
(`sysconfig.get_paths()["stdlib"]`, Python {platform.python_version()} here), read in
sorted path order, without `site-packages`, `lib-dynload`, the test suites (`test/`,
`tests/`, `idle_test/` folders and `test_*.py` files), the build-specific
`_sysconfigdata*` module, files over 250 kB and generated charmap codec tables.
{summary.get('stdlib_train_files', summary['train_files'])} files train the model; 2% of the
files, those with the smallest SHA-256 of their relative path, are held out (the
validation set, unchanged since the first run, so validation losses compare across runs):

{held}
{pkg_text}
The tokenizer (byte-level BPE, `tokenizers`) was trained on the standard-library training
files by the first run and is kept by every later one, with special tokens
`<|endoftext|>`, `<|file_sep|>`, `<|fim_prefix|>`, `<|fim_suffix|>`, `<|fim_middle|>`.

"""


def _packages_text(summary: dict) -> str:
    """The Data section's third-party code ("" where the weights trained on none)."""
    pkgs = summary.get("packages") or []
    if not pkgs:
        return ""
    # the filters of the recipe that recorded copies_dropped: vendored folders, copies
    vendored, copies = "", ""
    if "copies_dropped" in summary:
        dropped = summary["copies_dropped"]
        vendored = ("vendored copies of other packages (`_vendor`, `vendor`, `_vendored`, "
                    "`externals`, `_externals` folders), ")
        copies = (" No file that holds more than 30% of a held-out file's distinctive lines "
                  "(stripped lines of 25 characters or more) is trained on"
                  + (": " + "; ".join(f"`{d}`" for d in dropped) if dropped else "") + ".")
    return f"""
Third-party code: the Python source of {len(pkgs)} packages pinned by version, downloaded
once as wheels (`pip download --no-deps NAME==VERSION`, into `$INKLING_WHEEL_CACHE`,
default `~/.cache/inkling/wheels`) and read straight from the wheel: their `.py` files
without the package's tests (`test`, `tests`, `testing` folders, `test_*.py`, `*_test.py`,
`conftest.py`), {vendored}files over 250 kB and tables written as code; a package over 4 M characters
keeps the files with the smallest SHA-256 of their path up to that size (sympy, SQLAlchemy,
Django...).{copies} The list is `PACKAGES` in `evaluation/packages.py`:

{", ".join(f"`{p}`" for p in pkgs)}.

**Held out entirely: `{summary.get('held_out_package') or 'toolz==1.0.0'}`** (and its `tlz`
alias): never trained on (the recipe refuses it and asserts that no training file comes from
it), evaluated on below (validation loss on its rows, next-line exact match on its files).
In all {summary['train_files']} training files, {summary.get('train_chars', 0) / 1e6:.1f} M
characters ({summary.get('stdlib_train_files', '?')} of them from the standard library).
"""


def _samples_section(o: dict) -> str:
    repeat = (f" The last run took each standard-library chunk {o['stdlib_repeat']} times an "
              "epoch, each a sample of its own, so that the standard library kept its share "
              "of the data." if o.get("stdlib_repeat", 1) > 1 else "")
    return f"""## Samples

Files are cut into chunks of about 3,000 characters at line ends, in a shuffled order
each epoch; half the chunks become fill-in-the-middle samples (the middle is the rest of a
line from a cursor inside it, a whole line, 2 to 8 lines, or any span up to 200
characters), half of those in prefix-suffix-middle order and half in
suffix-prefix-middle order, with prefix, suffix and middle tokenized separately as the
Engine does at a cursor. Samples are packed into rows of {o['seq_len']} tokens.{repeat}

**Repository-level samples** ({100 * o.get('repo_rate', 0):.0f}% of the chunks of files that
have other files in their package; a standard-library package counts as one): the chunk is
cut at the first line end after 1,800 characters (the rest is an ordinary sample) and
written after 1 to 4 other files of the same package, in the Qwen2.5-Coder repository-level
format without its `<|repo_name|>` line:

```
<|file_sep|>{{path of a neighbour}}\\n{{its text}}
...
<|file_sep|>{{path of the file}}\\n{{the chunk, plain or as a fill-in-the-middle sample}}<|endoftext|>
```

- `<|file_sep|>` is the special token; `{{path}}\\n{{text}}` after it is tokenized as one text;
  paths are relative to the package root as installed (`requests/adapters.py`,
  `email/parser.py`); every neighbour's text ends with a newline.
- A neighbour's text is either its outline (the `class` and `def` header lines, whole when
  they span lines, with their indentation, and the module-level `UPPER_CASE` constants, in
  file order) or a cut of 8 to 40 consecutive lines; at most 800 characters each and 1,600
  in all (about 450 tokens).
- The files the target imports come first in the choice and sit nearest the target (the
  first chosen is written last).
- A fill-in-the-middle target reads `<|file_sep|>{{path}}\\n<|fim_prefix|>...`
  (`psm`) or `<|file_sep|>{{path}}\\n<|fim_prefix|><|fim_suffix|>...` (`spm`): the
  runtime's repository-context block is this sequence of `<|file_sep|>` blocks, then the
  current file's `<|file_sep|>{{path}}\\n`, then the usual prompt.

"""


def _recipe_section(summary: dict) -> str:
    o = summary["options"]
    return f"""## Recipe

AdamW (betas 0.9/0.95, weight decay {o['weight_decay']}, fused), gradient clipping at 1.0,
batch {o['batch_size']} x {o['seq_len']} tokens, seed {o['seed']}; the learning rate warms up
linearly over {o['warmup']} steps to {o['lr']}, then decays as a cosine to
{o['min_lr_ratio']} of it over the step budget. The schedule depends on the step alone,
and the budget may change while a run goes on without a jump in the rate: a change at step
s starts a new cosine segment from the rate in force at s to the floor at the new total
(`--steps N` on a resume extends, `--cooldown K` anneals over the next K steps).

`inkling train` checkpoints to `runs/inkling-tiny/checkpoint.pt` (float32 weights, AdamW
state, data epoch and row, schedule, RNG states; written atomically every 10 minutes and
when stopped by SIGTERM or Ctrl-C after the step in progress); `inkling train --resume
runs/inkling-tiny` continues bit for bit. At every evaluation that improves the validation
loss, `runs/inkling-tiny/best/` receives the export, and `inkling train --ship
runs/inkling-tiny` copies it here.

{_schedule_text(summary)}

"""


def _runs_section(summary: dict) -> str:
    runs = summary.get("runs") or []
    return f"""## Runs

{_runs_table(summary)}

In all: {summary.get('tokens_total', summary['tokens_seen']) / 1e6:.2f} M tokens,
{summary.get('minutes_total', summary['minutes'])} minutes of training{_early_runs_note(runs)}; tokens/s is
a run's tokens over its training time, on a CPU shared with other work.

The loss log of all runs is `training_log.tsv` (run, step, tokens, tokens over all runs,
training loss, learning rate, validation losses; run 1's steps were not kept), the curve
`loss_curve.png`.

![loss curve](loss_curve.png)

"""


def _results_section(model_dir: Path, summary: dict, evals_text: str) -> str:
    return f"""## Results

Validation loss (held-out standard-library files, same sample mix): **{_fmt_loss(summary.get('validation_loss'))}**
nats/token (final training loss {_fmt_loss(summary.get('final_train_loss'))}); on the held-out
package's rows (toolz, with repository-level samples): {_fmt_loss(summary.get('validation_loss_package'))}.

{_projection_text(model_dir)}{evals_text}

"""


def _limitations_section(summary: dict) -> str:
    return f"""## Limitations

The budget is in steps and the machine is shared, so how many tokens fit in an hour depends
on what else runs: these runs saw {summary.get('tokens_total', summary['tokens_seen']) / 1e6:.1f} M
tokens in all, far from the about 120 M tokens (20 a parameter) a model of this size is
usually trained on. The model writes plausible Python shapes but often not the exact line:
it is there so that everything works offline, and to measure cost. For quality, point
inkling at a real code model.
"""
