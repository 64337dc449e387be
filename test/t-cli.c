/* The tools' shared parsing and message text (tools/cli*.c) and zkr-ls's
 * classification and table columns (tools/ls.c), linked from the tools'
 * library as the tools link them: the regression tests of what
 * fuzz/fuzz-cli and fuzz/fuzz-ls found. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "ls.h"
#include "tap.h"

const char *prog = "zkr-ls";

/* Run @fn(@arg) in a child with its stderr into @buf; its exit status. */
static int child_stderr(void (*fn)(const char *), const char *arg, char *buf,
                        size_t len) {
  int fds[2];
  if (pipe(fds) != 0)
    tap_bail("pipe");
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0)
    tap_bail("fork");
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    fn(arg);
    _exit(99);
  }
  close(fds[1]);
  size_t got = 0;
  ssize_t r;
  while (got + 1 < len && (r = read(fds[0], buf + got, len - 1 - got)) > 0)
    got += (size_t)r;
  buf[got] = '\0';
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void bad_session_timeout(const char *arg) {
  struct run_opts o;
  run_opts_init(&o);
  run_opt(&o, OPT_SESSION, arg);
}

static void unknown_long_option(const char *arg) {
  static const struct option longopts[] = {CLI_RUN_LONGOPTS,
                                           {NULL, 0, NULL, 0}};
  char *argv[] = {(char *)"zkr-ls", (char *)arg, NULL};
  opterr = 0;
  int c = getopt_long(2, argv, ":s:vV", longopts, NULL);
  option_error(c, argv, longopts);
}

int main(void) {
  tap_init(30);

  /* found by fuzz/fuzz-cli (corpus: opt-long-utf8): a usage message was
   * cut at a fixed size (1023, later 2047 bytes), inside a UTF-8
   * character and without its end */
  size_t n = 1100;
  char *arg = malloc(2 * n + 1);
  for (size_t i = 0; i < n; i++)
    memcpy(arg + 2 * i, "\xc3\xa9", 2); /* é */
  arg[2 * n] = '\0';
  size_t cap = 2 * n + 512;
  char *out = malloc(cap), *want = malloc(cap);
  int st = child_stderr(bad_session_timeout, arg, out, cap);
  snprintf(want, cap,
           "zkr-ls: invalid session timeout '%s': milliseconds, %d to %d\n"
           "Try 'zkr-ls --help' for more information.\n",
           arg, ZKR_SESSION_TIMEOUT_MIN, ZKR_SESSION_TIMEOUT_MAX);
  is(st, EX_USAGE, "a bad --session-timeout exits 64");
  ok(strcmp(out, want) == 0,
     "the message quoting a %zu-byte argument is whole (%zu bytes)",
     strlen(arg), strlen(out));

  /* found by fuzz/fuzz-cli (corpus: args-long-unknown): an unknown long
   * option was named cut to 63 bytes, inside a character */
  char opt[128] = "--";
  for (int i = 0; i < 40; i++)
    strcat(opt, "\xc3\xa9");
  strcat(opt, "=1");
  st = child_stderr(unknown_long_option, opt, out, cap);
  snprintf(want, cap,
           "zkr-ls: unknown option '%.*s'\n"
           "Try 'zkr-ls --help' for more information.\n",
           (int)strcspn(opt, "="), opt);
  is(st, EX_USAGE, "an unknown long option exits 64");
  ok(strcmp(out, want) == 0, "it is named whole, up to its '=': %.*s",
     (int)strcspn(out, "\n"), out);
  st = child_stderr(unknown_long_option, "--no\x01pe=x", out, cap);
  ok(st == EX_USAGE &&
         strcmp(out, "zkr-ls: unknown option '--no\\x01pe'\n"
                     "Try 'zkr-ls --help' for more information.\n") == 0,
     "and escaped: %.*s", (int)strcspn(out, "\n"), out);

  /* found by fuzz/fuzz-ls (corpus: owner-long-id): an id longer than the
   * field was cut inside a character */
  char data[1200] = "host=h pid=7 id=";
  for (int i = 0; i < 300; i++)
    strcat(data, "\xc3\xa9");
  struct owner o;
  ok(parse_owner(data, &o) && o.pid == 7 && strcmp(o.host, "h") == 0,
     "contender data with a 600-byte id");
  is(strlen(o.id), 510, "its id cut to 510 bytes, between two characters");
  ok(parse_owner("host=web-1 pid=42 id=a b", &o) && o.pid == 42 &&
         strcmp(o.host, "web-1") == 0 && strcmp(o.id, "a b") == 0,
     "host, pid and an id with a space");
  ok(!parse_owner("host=h pid=x", &o) && !parse_owner("10.0.0.5", &o),
     "not zkr's data");

  /* found by fuzz/fuzz-ls (corpus: table-ctrl, table-utf8-cut): the table
   * printed the host and id of node data raw (a terminal escape in the
   * data reached the terminal) and cut them inside a character */
  char col[64];
  ls_column(col, sizeof col, "evil\x1b[2J\x07");
  ok(strcmp(col, "evil\\x1b[2J\\x07") == 0, "control characters escaped: %s",
     col);
  char long_id[128] = "";
  for (int i = 0; i < 40; i++)
    strcat(long_id, "\xc3\xa9");
  ls_column(col, sizeof col, long_id);
  is(strlen(col), 62, "a long id cut to 62 bytes, between two characters");

  /* the numbers */
  long l = 0;
  ok(parse_long("100", 100, 200, &l) == 0 && l == 100, "parse_long 100");
  ok(parse_long("+1", 0, 9, &l) < 0 && parse_long(" 1", 0, 9, &l) < 0 &&
         parse_long("99999999999999999999", 0, LONG_MAX, &l) < 0,
     "parse_long refuses a sign, a space, an overflow");
  int64_t ms = 0;
  ok(parse_seconds("0.0005", &ms) == 0 && ms == 1, "0.0005 s is 1 ms");
  is(parse_seconds("0.0004", &ms), -2, "0.0004 s rounds to 0: refused");
  ok(parse_seconds("1000000000", &ms) == 0 && ms == INT64_C(1000000000000),
     "10^9 s");
  ok(parse_seconds("1000000000.0005", &ms) < 0, "past 10^9 s");

  free(arg);
  free(out);
  free(want);
  return tap_done();
}
