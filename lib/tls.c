/*
 * Thread-local state of the library, a leaf every file may read: whether
 * the current thread runs a zkr or ZooKeeper callback (where blocking
 * calls refuse with ZKR_EDEADLK).
 */
#include "config.h"

#include "zkr-private.h"

_Thread_local int zkr__tls_in_callback;
