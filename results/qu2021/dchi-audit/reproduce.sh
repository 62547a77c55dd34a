#!/bin/sh
privnlu reproduce qu2021-dchi-audit
