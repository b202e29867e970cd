#!/usr/bin/env bash
# Start or resume the long training of the bundled model (issue 28) in the background, at
# nice 19, so that it takes only the CPU time nothing else wants.
#
#   scripts/train_background.sh [more `inkling train` flags]   start, or resume runs/inkling-tiny
#   tail -f runs/train.log                                     progress: tokens/s, loss, val loss
#   kill -TERM "$(cat runs/train.pid)"                         stop: the step finishes, it saves, exits 0
#
# A first start continues from the shipped weights (same tokenizer, a new run: AdamW moments
# start at zero, the learning rate warms up over 20 steps to 3e-4 and decays as a cosine over
# 40,000 steps: re-warming to 1e-3 from trained weights made the held-out loss worse for the
# first hundreds of steps, 3e-4 improved it from the start); every later start resumes the
# checkpoint exactly. Flags given here go to the resume
# (e.g. --cooldown 600 to anneal over the next 600 steps before shipping).
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${INKLING_RUN:-runs/inkling-tiny}
mkdir -p runs
if [ -f runs/train.pid ] && kill -0 "$(cat runs/train.pid)" 2>/dev/null; then
  echo "already running: pid $(cat runs/train.pid) (log runs/train.log)" >&2
  exit 1
fi
if [ -f "$RUN/checkpoint.pt" ]; then
  args=(--resume "$RUN")
else
  args=(--init-from models/inkling-tiny --out "$RUN" --steps 40000 --lr 0.0003 --warmup 20
        --eval-every 100 --checkpoint-minutes 10 --log-every 20)
fi
echo "=== $(date -u '+%F %T') inkling train ${args[*]} --threads -1 $*" >> runs/train.log
nohup nice -n 19 .venv/bin/inkling train "${args[@]}" --threads -1 "$@" >> runs/train.log 2>&1 &
echo $! > runs/train.pid
echo "training: pid $(cat runs/train.pid), log runs/train.log, stop with kill -TERM \$(cat runs/train.pid)"
