#!/bin/sh
privnlu reproduce xie2022-figure1 --tasks cola --mode joint --dp-epsilons 1,8,20 --epochs 3 --batch-size 32 --train-limit 5000 --out results/xie2022/figure1-cola-joint-5k
