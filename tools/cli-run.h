/* COMMAND run by zkr-lock and zkr-elect (cli-run.c): its environment,
 * and its run in a process group of its own under a guard process. */
#ifndef ZKR_TOOLS_CLI_RUN_H
#define ZKR_TOOLS_CLI_RUN_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/* Our environment without @node_var and ZKR_FENCING_TOKEN, plus the two
 * for @token and @node; NULL out of memory. Free with free_env(). */
char **child_env(const char *node_var, int64_t token, const char *node);
void free_env(char **env);

/* Called while COMMAND runs, each time the poll() loop wakes: return 1,
 * once, when what COMMAND runs under was lost (after saying why), to have
 * COMMAND's process group sent SIGTERM, and SIGKILL kill_after_ms later. */
typedef int (*lost_fn)(pid_t group, void *ud);
struct run_cmd {
  char **cmd;              /* COMMAND and its arguments */
  char **env;              /* its environment */
  const sigset_t *oldmask; /* the signal mask to restore in it */
  int sfd;                 /* signals_setup()'s signalfd */
  int64_t kill_after_ms;   /* --kill-after */
  const char *holding;     /* "holds the lock", "leads": for messages */
  lost_fn lost_fn;         /* asked after each wake-up */
  void *ud;                /* for lost_fn */
  int lost;                /* out: lost_fn said lost */
  int forwarded; /* out: the last SIGINT, SIGTERM, SIGHUP, SIGQUIT passed on */
};
/* Run COMMAND in a process group of its own under the guard process,
 * pass on the signals that come meanwhile, and wait for it. Returns its
 * exit status (128+N if signal N ended it, 126/127 if it could not be
 * run, 70 if it could not be started or the guard died). */
int run_command(struct run_cmd *rc);

#endif
