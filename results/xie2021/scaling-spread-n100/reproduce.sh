#!/bin/sh
privnlu reproduce xie2021-scaling --n 100 --seeds 0,1,2,3,4 --repair 1x50,3x40 --out results/xie2021/scaling-spread-n100
