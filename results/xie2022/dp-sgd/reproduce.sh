#!/bin/sh
privnlu reproduce xie2022-dp-sgd
privnlu reproduce xie2022-dp-sgd --dp-epsilons 8 --lrs 0.01 --encoder-lrs 5e-05
