#!/bin/sh
privnlu reproduce xie2022-figure1 --tasks sst2 --mode joint --dp-mechanisms laplace --dp-calibrations correct --dp-epsilons 20 --epochs 3 --batch-size 32 --train-limit 5000 --repeats 2-5 --out results/xie2022/figure1-sst2-joint-laplace-repeats
