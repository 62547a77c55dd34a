#!/bin/sh
privnlu reproduce qu2021-sequence-rep
