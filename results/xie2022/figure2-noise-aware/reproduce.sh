#!/bin/sh
privnlu reproduce xie2022-figure2-noise-aware
