/* zkr -- ZooKeeper recipes for C. Include this header to get all of zkr. */
#ifndef ZKR_ZKR_H
#define ZKR_ZKR_H

#include <zkr/common.h>
#include <zkr/version.h>
#include <zkr/session.h>
#include <zkr/lock.h>
#include <zkr/mutex.h>
#include <zkr/rwlock.h>
#include <zkr/multilock.h>
#include <zkr/semaphore.h>
#include <zkr/election.h>
#include <zkr/stats.h>

#endif /* ZKR_ZKR_H */
