#!/bin/sh
privnlu reproduce xie2021-scaling --n 300 --graph 200 --repair 1x50,2x50,3x50,3x40 --out results/xie2021/scaling-repair-n300
