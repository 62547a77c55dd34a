#!/bin/sh
privnlu reproduce huang2020-table5 --mode frozen --scale cpu --lrs 0.001 --model all-MiniLM-L6-v2 --repeats 3
