#!/bin/sh
privnlu reproduce huang2020-figure3
