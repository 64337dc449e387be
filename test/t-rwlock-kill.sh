#!/usr/bin/env bash
# t-mutex-kill.sh with the read-write lock: a writer holder killed with
# SIGKILL while a reader waits, and a reader holder SIGSTOPped past its
# session timeout while a writer waits.
A_HOLDER=write A_WAITER=read B_HOLDER=read B_WAITER=write \
  exec bash "${abs_top_srcdir:-$(dirname "$0")/..}/test/t-mutex-kill.sh"
