#!/bin/sh
privnlu reproduce huang2020-federated-client-dp-sgd
