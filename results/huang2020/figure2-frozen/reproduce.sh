#!/bin/sh
privnlu reproduce huang2020-figure2 --lrs 0.001 --train-limit 5000
