#!/bin/sh
privnlu reproduce qu2021-figure4 --etas 37.5,50,65.55,75,100,125,150,175
