#!/bin/sh
privnlu reproduce xie2021-table1 --nmf-repair-iters 0
