#!/bin/sh
privnlu reproduce huang2020-figure2 --points 0:1,0:4,16:4,256:4,1024:4,inf:4,256:1,256:2,256:8 --mode joint --epochs 3 --batch-size 32 --train-limit 5000
