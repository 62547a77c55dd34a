"""Empirical privacy audits: statistical lower bounds on epsilon that test a mechanism's privacy claim.

* :mod:`.mechanism`: DP instance encoding and d_chi, from many draws of worst-case neighbours;
* :mod:`.noise_reading`: the two readings of DP instance encoding's noise draw;
* :mod:`.dp_sgd`: one-run audit of DP-SGD (Steinke, Nasr & Jagielski 2023).
"""
