#!/bin/sh
privnlu reproduce qu2021-table6-gpu --objectives denoising,vanilla,probability --model .gpu/all-MiniLM-L6-v2-fp16
