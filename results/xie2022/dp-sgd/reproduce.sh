#!/bin/sh
privnlu reproduce xie2022-dp-sgd
