#!/bin/sh
privnlu reproduce xie2022-noise-reading-audit
