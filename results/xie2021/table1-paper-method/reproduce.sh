#!/bin/sh
privnlu reproduce xie2021-table1-paper-method
