#!/bin/sh
privnlu reproduce huang2020-table6 --repeats 3
