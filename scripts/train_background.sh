#!/usr/bin/env bash
# Start or resume the long training of the bundled model (issue 28) in the background, at
# nice 19, so that it takes only the CPU time nothing else wants.
#
#   scripts/train_background.sh [more `inkling train` flags]   start, or resume runs/inkling-tiny
#   tail -f runs/train.log                                     progress: tokens/s, loss, val loss
#   kill -TERM "$(cat runs/train.pid)"                         stop: the step finishes, it saves, exits 0
#
# A first start continues from the shipped weights, or from $INKLING_INIT: an export, or a
# run's folder (stopped or finished), whose checkpoint's weights and AdamW moments go on
# (same tokenizer, a new run: an export's AdamW moments start at zero; the rate warms up
# over 50 steps to 3e-4 and decays as a cosine over 40,000 steps, so it stays near 3e-4 for
# hours; every later start resumes the checkpoint exactly. Flags given here go to the resume
# (e.g. --cooldown 900 to anneal to 6e-6 over the next 900 steps before shipping).
#
# That is a warm-stable-decay schedule, and it is what trains fastest here: run 5 from run
# 4's step-3000 export (INKLING_INIT=runs/inkling-tiny/best INKLING_RUN=runs/inkling-tiny-r5)
# rose by 0.13 nats at first, was back after about 1,900 steps and, 3,788 steps at 3e-4 and a
# 900-step cooldown later, had gained 0.14 nats in 19 M tokens; run 4 had gained 0.06 in 12 M
# at a constant 6e-5. Re-warming to 1e-3 from trained weights made the held-out loss worse.
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
  args=(--init-from "${INKLING_INIT:-models/inkling-tiny}" --out "$RUN" --steps 40000
        --lr 0.0003 --min-lr-ratio 0.02 --warmup 50
        --eval-every 100 --checkpoint-minutes 10 --log-every 20)
fi
echo "=== $(date -u '+%F %T') inkling train ${args[*]} --threads -1 $*" >> runs/train.log
nohup nice -n 19 .venv/bin/inkling train "${args[@]}" --threads -1 "$@" >> runs/train.log 2>&1 &
echo $! > runs/train.pid
echo "training: pid $(cat runs/train.pid), log runs/train.log, stop with kill -TERM \$(cat runs/train.pid)"
