#!/bin/sh
privnlu reproduce huang2020-federated-sentence-recovery-client-dp
