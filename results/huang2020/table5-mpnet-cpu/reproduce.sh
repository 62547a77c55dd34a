#!/bin/sh
privnlu reproduce huang2020-table5 --scale cpu --epochs 3 --batch-size 32 --out results/huang2020/table5-mpnet-cpu
