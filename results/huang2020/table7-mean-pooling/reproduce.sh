#!/bin/sh
privnlu reproduce huang2020-table7 --tasks sst2 --pooling mean
