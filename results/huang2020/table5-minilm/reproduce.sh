#!/bin/sh
privnlu reproduce huang2020-table5 --epochs 1 --train-limit 480 --model all-MiniLM-L6-v2
