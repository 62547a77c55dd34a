#!/bin/sh
privnlu reproduce qu2021-table1-2
