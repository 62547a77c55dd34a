#!/bin/bash
# Session 13, the second lane's last slot: DP-IE on CoLA at the Table 1 budget (scripts/issue10_s11_cola_dpie.sh's
# folder and protocol) under the paper's Laplace calibration at claimed epsilon 4 (scale 0.5, standard deviation
# 0.71 per coordinate), the noise at which the paper's Gaussian (sigma 0.72, claimed 8) stayed at the majority class:
# a test of "the noise per coordinate decides" (docs/results.md 8.2a), predicted before the run to stay at or near
# the majority class.
# Usage: nohup bash scripts/issue10_s13_cola_laplace.sh > runs/i10/s13-cola-laplace.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
cola_dpie laplace paper 4
