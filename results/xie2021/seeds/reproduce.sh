#!/bin/sh
privnlu reproduce xie2021-seeds
