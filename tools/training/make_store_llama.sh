#!/usr/bin/env bash
# Train the store corpus in the Llama architecture and save it in Hugging Face layout
# (models/store-llama: config.json + model.safetensors + the store tokenizer). Reuses
# models/store's corpus splits and tokenizer (vocabulary.txt, merges.txt); does not
# regenerate either. About 25 minutes on a shared 2-core machine, one torch thread.
#
#   tools/training/make_store_llama.sh            # from scratch
#   RESUME=1 tools/training/make_store_llama.sh   # continue an interrupted training
#
# Environment: PYTHON (default /usr/bin/python3: Debian's python3-torch, python3-numpy,
# python3-matplotlib), CHECKPOINTS (default /work/ckpt-llama, outside the repository;
# holds store.pt while training and final.pt at the end), THREADS (default 1).
set -euo pipefail
cd "$(dirname "$0")/../.."  # the repository's root

PYTHON=${PYTHON:-/usr/bin/python3}
CHECKPOINTS=${CHECKPOINTS:-/work/ckpt-llama}
THREADS=${THREADS:-1}
DATA=models/store
OUT=models/store-llama

mkdir -p "$OUT"
resume=()
if [[ "${RESUME:-0}" == 1 ]]; then
    resume=(--resume)
else
    : > "$OUT/training.log"
    rm -f "$CHECKPOINTS/store.pt" "$CHECKPOINTS/final.pt"
fi

# 1. training: the store model's schedule (steps, batch, learning rate), so the losses compare
"$PYTHON" tools/training/train.py --architecture llama --intermediate-size 384 --tokenizer "$DATA" \
    --data "$DATA" --out "$OUT" --checkpoints "$CHECKPOINTS" --threads "$THREADS" \
    --seed 2026 --steps 2400 --batch-size 32 --lr 2.5e-3 --warmup 100 --eval-every 200 \
    --eval-products 300 --checkpoint-minutes 3 --max-minutes 58 "${resume[@]}" 2>&1 | tee -a "$OUT/training.log"

# 2. export: config.json, model.safetensors, the tokenizer files, the README's training table
"$PYTHON" tools/training/export_hf.py --checkpoint "$CHECKPOINTS/final.pt" --tokenizer "$DATA" --out "$OUT"

# 3. the export checked against an independent float64 forward pass
"$PYTHON" -m pytest -q tools/tests/test_export_hf.py

ls -l "$OUT"
