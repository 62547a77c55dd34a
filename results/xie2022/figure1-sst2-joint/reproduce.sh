#!/bin/sh
privnlu reproduce xie2022-figure1 --tasks sst2 --mode joint --epochs 3 --batch-size 32 --train-limit 5000
