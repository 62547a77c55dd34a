#!/bin/sh
privnlu reproduce xie2022-figure1 --tasks cola --mode joint --epochs 9 --batch-size 32
