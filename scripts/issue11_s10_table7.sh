#!/bin/bash
# Session 10, issue 11: Qu et al. Table 7 (text-mode privacy-adaptive pretraining) at the Table 4 protocol, like
# Table 6's gain curve (scripts/issue11_s8_queue.sh stage 4) but with M_txt inputs: denoising MLM on text privatized
# at eta 100 (the clean warm-up of the M_rep run reused: it sees no privatized text), 1,000 adaptation steps, then
# continued to 3,000; each encoder fine-tuned in text mode exactly like the original's Table 4 runs (seeds 0-2).
# Resumes (pretraining from its checkpoint, finished fine-tuning runs are read back). The encoders are not committed
# (90 MB each): on a fresh clone the restored pretrain.json alone does not skip a stage, which reruns from its start
# (about 46 min for 1,000 text-mode steps on one thread); the M_rep warm head it starts from is denoising-1000's.
# STOP_AT=1000 stops after the 1,000-step point's fine-tuning.
# Usage: nohup bash scripts/issue11_s10_table7.sh > runs/i11/s10-table7.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh
export OMP_NUM_THREADS=1
P="nice -n 19 $PY -m privnlu.cli.main"
O=runs/dchi_pt
PT="dchi pretrain --dchi-mechanism text --eta 100 --batch-size 16 --max-length 64 --checkpoint-every 100 --objective denoising --quiet"
ft() {
  for s in 0 1 2; do
    $P dchi finetune --encoders transformer --modes text --etas 100 --max-length 128 --batch-size 32 --epochs 3 --quiet \
        --task sst2 --train-limit 10000 --seed $s --model $O/text-denoising-$1/encoder --tag pt-text-denoising-$1 \
        --out runs/dchi_t45/sst2_s$s
  done; stamp "table7 finetune $1"
}
# the warm head comes from the M_rep run's clean warm-up (scripts/issue11_s8_queue.sh stage 4): rerun it where missing
[ -f $O/denoising-1000/mlm_head_warm.safetensors ] || [ -d $O/text-denoising-1000/encoder ] || $P dchi pretrain \
    --dchi-mechanism rep --eta 100 --batch-size 16 --max-length 64 --checkpoint-every 200 --objective denoising --quiet \
    --warmup-steps 500 --steps 1000 --seed 0 --out $O/denoising-1000 --resume
[ -d $O/text-denoising-1000/encoder ] || $P $PT --init-head $O/denoising-1000/mlm_head_warm.safetensors \
    --steps 1000 --seed 0 --out $O/text-denoising-1000 --resume
stamp "table7 pretrain 1000"; ft 1000
[ "${STOP_AT:-}" = 1000 ] && exit 0   # session 12: the 1,000-step point first, the 3,000-step stage later
[ -d $O/text-denoising-3000/encoder ] || $P $PT --model $O/text-denoising-1000/encoder \
    --init-head $O/text-denoising-1000/mlm_head.safetensors --steps 2000 --seed 1 --out $O/text-denoising-3000 --resume
stamp "table7 pretrain 3000"; ft 3000
stamp "done"
