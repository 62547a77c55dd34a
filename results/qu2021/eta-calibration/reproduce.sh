#!/bin/sh
privnlu reproduce qu2021-eta-calibration
