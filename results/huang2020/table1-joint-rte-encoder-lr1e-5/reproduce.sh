#!/bin/sh
privnlu reproduce huang2020-table1 --tasks rte --variants baseline --mode joint --epochs 3 --batch-size 32 --encoder-lrs 1e-05 --out results/huang2020/table1-joint-rte-encoder-lr1e-5
