#!/bin/sh
privnlu reproduce xie2021-scaling --n 1000 --graph 200 --seeds 0,1 --repair 1x50,3x40 --out results/xie2021/scaling-repair-n1000
