#!/bin/sh
privnlu reproduce huang2020-table1 --mode joint --epochs 3 --batch-size 32
