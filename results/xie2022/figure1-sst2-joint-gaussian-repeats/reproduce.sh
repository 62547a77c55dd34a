#!/bin/sh
privnlu reproduce xie2022-figure1 --tasks sst2 --mode joint --dp-mechanisms gaussian --dp-calibrations correct --dp-epsilons 10,15,20 --epochs 3 --batch-size 32 --train-limit 5000 --repeats 2-9 --out results/xie2022/figure1-sst2-joint-gaussian-repeats
