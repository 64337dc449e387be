/* The tools' signals (cli-signal.c): taken from a signalfd, a wake pipe
 * for library callbacks, and the end of the process as by a signal. */
#ifndef ZKR_TOOLS_CLI_SIGNAL_H
#define ZKR_TOOLS_CLI_SIGNAL_H

#include <signal.h>

/* Before any thread exists: block the signals the tool takes (those not
 * ignored at start; SIGTTOU too) and return a signalfd for them, with the
 * mask before in *@oldmask; also make the wake pipe. -1 (said) on
 * failure. */
int signals_setup(sigset_t *oldmask);
/* signals_setup()'s signalfd; -1 before it. */
int cli_signal_fd(void);
/* In COMMAND, before exec: the dispositions and mask @oldmask the tool
 * started with (ignored stays ignored, the rest default). */
void cli_signals_restore(const sigset_t *oldmask);
/* From a library callback: wake the poll() loop (one byte on the pipe). */
void wake(void);
/* The read end of the wake pipe. */
int wake_fd(void);
/* Close both ends of the wake pipe (in a child that does not use it). */
void cli_wake_close(void);
/* Read everything waiting on @fd. */
void drain(int fd);
/* Read the signalfd @sfd: the first signal that ends a wait (SIGINT,
 * SIGTERM, SIGHUP, SIGQUIT), 0 if none came. */
int take_signal(int sfd);
/* End the process the way @sig would have; returns 128+@sig if it did
 * not. */
int die_by_signal(int sig);

/* The signals that end zkr-ls --watch and zkr-exporter into @set: SIGINT
 * and SIGTERM, but not one ignored at start, which stays ignored (as in
 * zkr-lock: a background job of a script starts with SIGINT ignored). */
void cli_end_signals(sigset_t *set);
/* For session_new_interruptible(): one of the signals @ud (a sigset_t,
 * blocked in every thread) within 50 ms, or 0. */
int cli_sigset_wait(void *ud);

#endif
