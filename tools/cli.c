/* Shared by the command-line tools (see cli.h). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

void usage_error(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: %s\nTry '%s --help' for more information.\n", prog, buf,
          prog);
  exit(EX_USAGE);
}

int parse_long(const char *s, long lo, long hi, long *out) {
  if (!s || !*s)
    return -1;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

const char *default_servers(void) {
  const char *s = getenv("ZKR_SERVERS");
  return s && *s ? s : "127.0.0.1:2181";
}
