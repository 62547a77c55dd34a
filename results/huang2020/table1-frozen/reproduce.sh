#!/bin/sh
privnlu reproduce huang2020-table1 --lrs 0.001
