#!/bin/sh
privnlu reproduce xie2021-figure1
