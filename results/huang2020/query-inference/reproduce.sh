#!/bin/sh
privnlu reproduce huang2020-query-inference
