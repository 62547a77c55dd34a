#!/bin/sh
privnlu reproduce huang2020-table6 --mode joint --epochs 3 --batch-size 32 --train-limit 5000
