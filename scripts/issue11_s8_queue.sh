#!/bin/bash
# Session 8 queue for issue 11, on one thread beside the issue-10 queue (THREADS=1 there); every stage resumes (a
# finished point is read back). Usage: nohup bash scripts/issue11_s8_queue.sh > runs/i11/s8-queue.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/restore_results.sh   # runs finished in an earlier session (results/) are skipped
export OMP_NUM_THREADS=1
N="nice -n 19"
P="$N $PY -m privnlu.cli.main"
while pgrep -f "reproduce xie2021" > /dev/null; do sleep 30; done   # an earlier copy of this queue still attacking
# 1. Xie & Hong 2021 Table 1 (k sweep) and Figure 1 (m sweep) with every method and metric, CoLA and SST-2
$P reproduce xie2021-table1 --seed 0 --out runs/i11/s8-xie2021 --quiet; stamp "xie2021 table1"
$P reproduce xie2021-figure1 --seed 0 --out runs/i11/s8-xie2021 --quiet; stamp "xie2021 figure1"
# 1b. The scaling curve with the session-8 attack (float32 nmf, duplicate repair): n = 100 and 300 on one thread
#     (CPU seconds are the clock); n = 300 also with 100 first-pass iterations. n = 1,000 was timed on 2 idle cores
#     (the queues paused): runs/i11/s8-scale/scale_sst2_n1000_g200_t2.json, docs/results_attacks.md.
B="$N $PY benchmarks/bench_reconstruction.py --task sst2 --train-limit 20000 --m 256 --k 4 --threads 1 --graph 200 --nmf-support 64 --methods nmf"
for n in 100 300; do
  [ -f runs/i11/s8-scale/scale_sst2_n${n}_g200.json ] || $B --n $n --out runs/i11/s8-scale/scale_sst2_n${n}_g200.json > /dev/null
done
[ -f runs/i11/s8-scale/scale_sst2_n300_g200_i100.json ] || $B --n 300 --nmf-iters 100 --out runs/i11/s8-scale/scale_sst2_n300_g200_i100.json > /dev/null
[ -f runs/i11/s8-scale/scale_sst2_n100_dense.json ] || $B --n 100 --graph 0 --out runs/i11/s8-scale/scale_sst2_n100_dense.json > /dev/null
stamp "scaling n = 100, 300"
# 2. SST-2 at k = 4 and 6, seeds 0-2 (session 5 ran CoLA's three seeds and three of SST-2's six points)
$N $PY benchmarks/xie2021_sweep.py --task sst2 --conditions 1:4,1:6 --seeds 0,1,2 --out-dir runs/i11/s8-seeds; stamp "sst2 seeds"
# 3. Qu et al. Table 4: equal budgets (3 epochs, batch 32, both encoders), the paper's learning rates, 3 seeds,
#    10,000 SST-2 sentences, the paper's etas 50, 100 and 150 (of its six)
FT="dchi finetune --encoders transformer,bilstm --modes null,token,text --etas 50,100,150 --max-length 128 --batch-size 32 --epochs 3 --quiet"
for s in 0 1 2; do
  $P $FT --task sst2 --train-limit 10000 --seed $s --out runs/dchi_t45/sst2_s$s; stamp "t4 sst2 seed $s"
done
# 4. Table 6, the gain against pretraining steps: denoising MLM on M_rep inputs at eta 100, continued in stages
#    (1,000 then 4,000 steps in all); each stage's encoder fine-tuned like the original's token-mode runs of step 3
O=runs/dchi_pt
PT="dchi pretrain --dchi-mechanism rep --eta 100 --batch-size 16 --max-length 64 --checkpoint-every 200 --objective denoising --quiet"
[ -f $O/denoising-1000/pretrain.json ] || $P $PT --warmup-steps 500 --steps 1000 --seed 0 --out $O/denoising-1000 --resume
[ -f $O/denoising-4000/pretrain.json ] || $P $PT --model $O/denoising-1000/encoder --init-head $O/denoising-1000/mlm_head.safetensors \
    --steps 3000 --seed 1 --out $O/denoising-4000 --resume
stamp "pretrain"
for s in 0 1 2; do for n in 1000 4000; do
  $P dchi finetune --encoders transformer --modes token --etas 100 --max-length 128 --batch-size 32 --epochs 3 --quiet \
      --task sst2 --train-limit 10000 --seed $s --model $O/denoising-$n/encoder --tag pt-denoising-$n --out runs/dchi_t45/sst2_s$s
done; done; stamp "pretrain gain"
# 5. Table 5: MRPC (all 3,668 pairs) stands in for QQP; 6. the scaling curve's last point, n = 3,000 (150,000
#    encodings, one thread), runs after MRPC seed 0 (session 10's order: it fits one session, seeds 1-2 do not)
t5() { $P $FT --task mrpc --seed $1 --out runs/dchi_t45/mrpc_s$1; stamp "t5 mrpc seed $1"; }
t5 0
[ -f runs/i11/s8-scale/scale_sst2_n3000_g200.json ] || $B --n 3000 --out runs/i11/s8-scale/scale_sst2_n3000_g200.json > /dev/null
stamp "scaling n = 3,000"
t5 1; t5 2
stamp "queue done"
