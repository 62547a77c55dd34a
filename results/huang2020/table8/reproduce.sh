#!/bin/sh
privnlu reproduce huang2020-table8
