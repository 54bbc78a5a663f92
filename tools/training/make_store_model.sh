#!/usr/bin/env bash
# Regenerate the store model end to end: corpus, tokenizer + training, export,
# quality, goldens. About an hour on a 2-core machine (training is ~55 minutes).
#
#   tools/training/make_store_model.sh            # everything, from scratch
#   RESUME=1 tools/training/make_store_model.sh   # continue an interrupted training
#   SKIP_CORPUS=1 tools/training/make_store_model.sh  # keep models/store/{train,validation}.tsv
#                                                     # (e.g. written from WANDS by tools/training/wands.py)
#
# Environment: PYTHON (default /usr/bin/python3: Debian's python3-torch,
# python3-numpy, python3-matplotlib), CHECKPOINTS (default /work/ckpt, outside the
# repository; holds store.pt while training and final.pt at the end).
set -euo pipefail
cd "$(dirname "$0")/../.."  # the repository's root

PYTHON=${PYTHON:-/usr/bin/python3}
CHECKPOINTS=${CHECKPOINTS:-/work/ckpt}
OUT=models/store

resume=()
if [[ "${RESUME:-0}" == 1 ]]; then
    resume=(--resume)
else
    # 1. the corpus (generated: WANDS is not available here; see models/store/README.md)
    if [[ "${SKIP_CORPUS:-0}" != 1 ]]; then
        "$PYTHON" tools/training/corpus.py --seed 2026 --out "$OUT"
    fi
    : > "$OUT/training.log"
    rm -f "$CHECKPOINTS/store.pt" "$CHECKPOINTS/final.pt"
fi

# 2. tokenizer (first step of train.py) and training
"$PYTHON" tools/training/train.py --data "$OUT" --out "$OUT" --checkpoints "$CHECKPOINTS" \
    --vocabulary-size 2048 --seed 2026 --steps 2400 --batch-size 32 --lr 2.5e-3 \
    --warmup 100 --eval-every 200 --eval-products 300 --checkpoint-minutes 4 \
    --max-minutes 55 "${resume[@]}" 2>&1 | tee -a "$OUT/training.log"

# 3. export to model.safetensors + manifest.json
"$PYTHON" tools/training/export.py --checkpoint "$CHECKPOINTS/final.pt" --out "$OUT"

# 4. quality numbers (printed; written to quality.json, README.md, manifest.json)
"$PYTHON" tools/training/quality.py --model "$OUT" --data "$OUT" --readme "$OUT/README.md"

# 5. float64 reference goldens for the C++ tests, checked against the training model
"$PYTHON" tools/references/reference.py --model "$OUT" --data "$OUT" --out tests/data/store \
    --check-against "$CHECKPOINTS/final.pt"
"$PYTHON" tools/references/generate.py --model "$OUT" --golden tests/data/store/generation.json  # 6. golden generations
"$PYTHON" tools/references/interventions.py --model "$OUT" --data "$OUT" --golden tests/data/store --copy-average  # 7. interpretability goldens (~7 min)

ls -l "$OUT" tests/data/store
