#!/bin/sh
privnlu reproduce qu2021-figure3
