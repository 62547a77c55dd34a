"""The reconstruction attack on instance encoding (Xie & Hong 2021): recovering the private representations of a
whole release, with its pair networks, clusterings, metrics, sweep and auditor."""
