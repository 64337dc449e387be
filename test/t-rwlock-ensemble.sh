#!/usr/bin/env bash
# The ensemble fault test of t-mutex-ensemble.sh with the read-write lock:
# 10 processes, each operation a read with probability 0.8, while the
# leader and then a follower are killed.
RECIPE=mixed exec bash "${abs_top_srcdir:-$(dirname "$0")/..}/test/t-mutex-ensemble.sh"
