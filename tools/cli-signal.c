/*
 * The tools' signals (see cli-signal.h): the ones taken over, blocked
 * before any thread exists and read from a signalfd; those ignored at
 * start left ignored; the wake pipe that library callbacks write to; the
 * end of the process as a signal would have ended it; and the signals
 * that end zkr-ls --watch and zkr-exporter.
 *
 * Owns: the signalfd, the wake pipe and the dispositions found at start.
 * Must not touch: what a signal means to a tool (its callers decide).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* The signals the tools take over. */
static const int handled[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                              SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM};
#define NHANDLED (sizeof handled / sizeof handled[0])

static int wake_pipe[2] = {-1, -1};
static int signal_fd = -1;

/* Which handled signals were ignored at start: they stay ignored, in the
 * tool and in COMMAND. */
static int ignored_at_start[NHANDLED];

int signals_setup(sigset_t *oldmask) {
  sigset_t mask;
  sigemptyset(&mask);
  for (size_t i = 0; i < NHANDLED; i++) {
    struct sigaction sa;
    ignored_at_start[i] =
        sigaction(handled[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
    if (handled[i] == SIGCHLD && ignored_at_start[i])
      signal(SIGCHLD, SIG_DFL); /* else children are reaped unseen */
    else if (ignored_at_start[i])
      continue; /* ignored at start: stays ignored */
    sigaddset(&mask, handled[i]);
  }
  /* Also SIGTTOU (not taken): the tool may write its messages while
   * COMMAND's group has the terminal, even with tostop set. */
  sigset_t blocked = mask;
  sigaddset(&blocked, SIGTTOU);
  if (sigprocmask(SIG_BLOCK, &blocked, oldmask) != 0) {
    msg("sigprocmask: %s", strerror(errno));
    return -1;
  }
  signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd < 0 || pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    msg("signalfd/pipe: %s", strerror(errno));
    return -1;
  }
  return signal_fd;
}

void cli_signals_restore(const sigset_t *oldmask) {
  for (size_t i = 0; i < NHANDLED; i++)
    signal(handled[i], ignored_at_start[i] ? SIG_IGN : SIG_DFL);
  sigprocmask(SIG_SETMASK, oldmask, NULL);
}

void wake(void) {
  char c = 1;
  ssize_t w = write(wake_pipe[1], &c, 1);
  (void)w; /* a full pipe already wakes the loop */
}

int wake_fd(void) {
  return wake_pipe[0];
}

void cli_wake_close(void) {
  close(wake_pipe[0]);
  close(wake_pipe[1]);
}

int cli_signal_fd(void) {
  return signal_fd;
}

void drain(int fd) {
  char buf[64];
  while (read(fd, buf, sizeof buf) > 0)
    ;
}

int take_signal(int sfd) {
  struct signalfd_siginfo si;
  int got = 0;
  while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
    int sig = (int)si.ssi_signo;
    if (sig == SIGCHLD || sig == SIGALRM || sig == SIGUSR1 || sig == SIGUSR2)
      continue; /* nothing to forward to yet */
    if (!got)
      got = sig;
  }
  return got;
}

int die_by_signal(int sig) {
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  raise(sig);
  sigprocmask(SIG_UNBLOCK, &one, NULL);
  return 128 + sig;
}

void cli_end_signals(sigset_t *set) {
  static const int ends[] = {SIGINT, SIGTERM};
  sigemptyset(set);
  for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
    struct sigaction sa;
    if (sigaction(ends[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
      continue;
    sigaddset(set, ends[i]);
  }
}

int cli_sigset_wait(void *ud) {
  struct timespec ts = {0, 50 * 1000000};
  int got = sigtimedwait(ud, NULL, &ts);
  return got > 0 ? got : 0;
}
