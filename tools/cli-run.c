/*
 * COMMAND run by zkr-lock and zkr-elect (see cli-run.h): its environment,
 * the guard process between the tool and COMMAND, COMMAND's process group
 * and the terminal, the signals passed on to it, and its end when what it
 * runs under is lost (SIGTERM, then SIGKILL --kill-after later).
 *
 * Owns: the guard and the two pipes to it. Must not touch: the lock or
 * the election COMMAND runs under (the caller's lost_fn tells).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cli.h"

extern char **environ;

/* Built before fork. */
char **child_env(const char *node_var, int64_t token, const char *node) {
  size_t n = 0, vl = strlen(node_var);
  while (environ[n])
    n++;
  char **env = calloc(n + 3, sizeof *env);
  if (!env)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (strncmp(environ[i], "ZKR_FENCING_TOKEN=", 18) == 0 ||
        (strncmp(environ[i], node_var, vl) == 0 && environ[i][vl] == '='))
      continue;
    env[k++] = environ[i];
  }
  char *t = malloc(64);
  size_t nl = vl + strlen(node) + 2;
  char *p = malloc(nl);
  if (!t || !p) {
    free(t);
    free(p);
    free(env);
    return NULL;
  }
  snprintf(t, 64, "ZKR_FENCING_TOKEN=%lld", (long long)token);
  snprintf(p, nl, "%s=%s", node_var, node);
  env[k++] = t;
  env[k++] = p;
  env[k] = NULL;
  return env;
}

/* Frees what child_env() allocated: the array and its last two entries. */
void free_env(char **env) {
  size_t n = 0;
  while (env[n])
    n++;
  free(env[n - 1]);
  free(env[n - 2]);
  free(env);
}

/* ---- the guard process between the tool and COMMAND ---- */

enum { GUARD_PID = 1, GUARD_STATUS = 2 };
struct guard_msg {
  int32_t kind;
  int32_t value;
};

static int write_msg(int fd, int kind, int value) {
  struct guard_msg gm = {kind, value};
  return write(fd, &gm, sizeof gm) == (ssize_t)sizeof gm;
}

/* Blocking read of one message; 0 at EOF (the guard is gone). */
static int read_msg(int fd, struct guard_msg *gm) {
  size_t got = 0;
  while (got < sizeof *gm) {
    ssize_t r = read(fd, (char *)gm + got, sizeof *gm - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return 0;
    got += (size_t)r;
  }
  return 1;
}

/* Signal COMMAND's whole process group. */
static void signal_group(pid_t leader, int sig) {
  if (leader > 0)
    kill(-leader, sig);
}

/* Make @pgrp the foreground process group of @tty, from a process that
 * may be in the background (SIGTTOU blocked meanwhile). */
static void set_foreground(int tty, pid_t pgrp) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  if (tcsetpgrp(tty, pgrp) != 0 && verbose)
    msg("cannot give the terminal to process group %ld: %s", (long)pgrp,
        strerror(errno));
  sigprocmask(SIG_SETMASK, &old, NULL);
}

/*
 * The guard: starts COMMAND as the leader of a new process group, tells
 * the tool its pid, and waits for either COMMAND's end (then tells the
 * tool its status) or the tool's death (EOF on @life: then SIGKILLs
 * COMMAND's group). The handled signals stay blocked here, so neither a
 * signal meant for the tool nor one from the terminal ends the guard.
 * If the guard itself is SIGKILLed, COMMAND (its direct child, through
 * PR_SET_PDEATHSIG) dies with it and the tool kills the rest of the group.
 */
static void run_guard(const struct run_cmd *rc, int life, int stp) {
  char **cmd = rc->cmd;
  pid_t me = getpid();
  /* The terminal: hand it to COMMAND's group if ours has it. */
  int tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  int handoff = tty >= 0 && tcgetpgrp(tty) == getpgrp();
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int cfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
    write_msg(stp, GUARD_PID, -1);
    write_msg(stp, GUARD_STATUS, EX_SOFTWARE << 8);
    _exit(0);
  }
  if (child == 0) {
    setpgid(0, 0);
    if (handoff)
      set_foreground(tty, getpid());
#ifdef __linux__
    /* If the guard dies (even by SIGKILL), COMMAND dies with it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != me)
      _exit(EX_TEMPFAIL);
#endif
    if (tty >= 0)
      close(tty);
    cli_signals_restore(rc->oldmask);
    environ = rc->env;
    execvp(cmd[0], cmd);
    int e = errno;
    fprintf(stderr, "%s: cannot run %s: %s\n", prog, cmd[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  setpgid(child, child); /* as the child does: whichever runs first */
  write_msg(stp, GUARD_PID, child);
  int status = 0, done = 0;
  while (!done) {
    struct pollfd pf[2] = {{life, POLLIN, 0}, {cfd, POLLIN, 0}};
    if (poll(pf, 2, cfd < 0 ? 100 : -1) < 0 && errno != EINTR)
      break;
    if (pf[1].revents) {
      struct signalfd_siginfo si;
      while (read(cfd, &si, sizeof si) == (ssize_t)sizeof si)
        ;
    }
    pid_t w;
    while ((w = waitpid(child, &status, WNOHANG | WUNTRACED)) == child) {
      if (WIFSTOPPED(status)) {
        /* COMMAND must not be suspended (^Z) while it holds the lock or
         * leads: continue it. */
        fprintf(stderr, "%s: %s was stopped by %s while it %s; continuing it\n",
                prog, cmd[0], strsignal(WSTOPSIG(status)), rc->holding);
        signal_group(child, SIGCONT);
        continue;
      }
      done = 1;
      break;
    }
    if (!done && pf[0].revents) {
      /* The tool is gone: its lock or leadership goes with its session,
       * so COMMAND's group must not go on. */
      signal_group(child, SIGKILL);
      waitpid(child, &status, 0);
      done = 1;
    }
  }
  if (handoff)
    set_foreground(tty, getpgrp());
  write_msg(stp, GUARD_STATUS, status);
  _exit(0);
}

int run_command(struct run_cmd *rc) {
  char **cmd = rc->cmd;
  rc->lost = 0;
  rc->forwarded = 0;
  int life[2], stp[2];
  if (pipe2(life, O_CLOEXEC) != 0) {
    msg("pipe: %s", strerror(errno));
    return EX_SOFTWARE;
  }
  if (pipe2(stp, O_CLOEXEC) != 0) {
    msg("pipe: %s", strerror(errno));
    close(life[0]);
    close(life[1]);
    return EX_SOFTWARE;
  }
  fflush(NULL);
  pid_t guard = fork();
  if (guard < 0) {
    msg("fork: %s", strerror(errno));
    close(life[0]);
    close(life[1]);
    close(stp[0]);
    close(stp[1]);
    return EX_SOFTWARE;
  }
  if (guard == 0) {
    close(life[1]);
    close(stp[0]);
    close(rc->sfd);
    cli_wake_close();
    run_guard(rc, life[0], stp[1]);
  }
  close(life[0]);
  close(stp[1]);
  struct guard_msg gm;
  pid_t child = -1; /* COMMAND, the leader of its process group */
  if (read_msg(stp[0], &gm) && gm.kind == GUARD_PID)
    child = (pid_t)gm.value;
  int status = 0, gstatus = 0, have_status = 0;
  int64_t kill_at = -1;
  for (;;) {
    pid_t w = waitpid(guard, &gstatus, WNOHANG);
    if (w == guard) {
      if (read_msg(stp[0], &gm) && gm.kind == GUARD_STATUS) {
        status = gm.value;
        have_status = 1;
      }
      break;
    }
    if (!rc->lost && rc->lost_fn(child, rc->ud)) {
      rc->lost = 1;
      signal_group(child, SIGTERM);
      kill_at = now_ms() + rc->kill_after_ms;
    }
    int wait = -1;
    if (kill_at >= 0) {
      int64_t d = kill_at - now_ms();
      if (d <= 0) {
        msg("%s did not exit %.1f s after SIGTERM: sending SIGKILL to its "
            "process group",
            cmd[0], (double)rc->kill_after_ms / 1000.0);
        signal_group(child, SIGKILL);
        kill_at = -1;
      } else {
        wait = (int)d;
      }
    }
    struct pollfd pf[2] = {{rc->sfd, POLLIN, 0}, {wake_fd(), POLLIN, 0}};
    int pr = poll(pf, 2, wait);
    if (pr < 0 && errno != EINTR) {
      msg("poll: %s", strerror(errno));
      signal_group(child, SIGKILL);
    }
    if (pf[1].revents)
      drain(wake_fd());
    if (pf[0].revents) {
      struct signalfd_siginfo si;
      while (read(rc->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD || sig == SIGALRM)
          continue;
        /* The terminal's own signals (^C) reach COMMAND's group directly
         * when it is the foreground group; anything that reaches the
         * tool is passed on to the whole group. */
        if (verbose)
          msg("forwarding %s to %s", strsignal(sig), cmd[0]);
        signal_group(child, sig);
        if (sig != SIGUSR1 && sig != SIGUSR2)
          rc->forwarded = sig;
      }
    }
  }
  close(stp[0]);
  close(life[1]);
  if (!have_status) {
    /* The guard died without telling (it was killed): COMMAND's group
     * must not go on without a guard. */
    msg("the guard process of %s ended unexpectedly (%s %d): killing %s's "
        "process group",
        cmd[0], WIFSIGNALED(gstatus) ? "signal" : "status",
        WIFSIGNALED(gstatus) ? WTERMSIG(gstatus) : WEXITSTATUS(gstatus),
        cmd[0]);
    signal_group(child, SIGKILL);
    return EX_SOFTWARE;
  }
  return WIFEXITED(status)     ? WEXITSTATUS(status)
         : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                               : EX_SOFTWARE;
}
