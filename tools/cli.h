/* Shared by the command-line tools: usage errors, numbers, the default
 * connection string. */
#ifndef ZKR_TOOLS_CLI_H
#define ZKR_TOOLS_CLI_H

#define EX_USAGE 64
#define EX_UNAVAILABLE 69

/* The program's name in messages; set by main(). */
extern const char *prog;

/* "prog: MESSAGE", a hint to --help, and exit 64. */
void usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
/* A decimal integer in [lo, hi] into *out; 0, or -1 if @s is not one. */
int parse_long(const char *s, long lo, long hi, long *out);
/* $ZKR_SERVERS if set and not empty, else 127.0.0.1:2181. */
const char *default_servers(void);

#endif
