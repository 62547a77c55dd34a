#!/bin/sh
privnlu reproduce qu2021-table4
