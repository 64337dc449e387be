/* Shared by the command-line tools: usage errors, option errors, numbers,
 * the default connection string, and the escaping of untrusted text for
 * messages and JSON. */
#ifndef ZKR_TOOLS_CLI_H
#define ZKR_TOOLS_CLI_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#define EX_USAGE 64
#define EX_UNAVAILABLE 69

/* The program's name in messages; set by main(). */
extern const char *prog;

/* "prog: MESSAGE", a hint to --help, and exit 64. */
void usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
/* The usage error for what getopt_long() returned as @c (':' a missing
 * argument, '?' anything else), naming the option the user wrote: "-x"
 * (also inside a cluster such as "-vx") or "--name". Exits 64. */
void option_error(int c, char *const argv[], const struct option *longopts)
    __attribute__((noreturn));
/* A plain decimal integer (digits only, no sign, space or base prefix) in
 * [lo, hi] into *out; 0, or -1 if @s is not one. */
int parse_long(const char *s, long lo, long hi, long *out);
/* Seconds as a plain decimal ("2", "0.5": digits with an optional
 * fraction, at most 10^9) into milliseconds, rounded to the nearest.
 * Returns 0; -1 if @s is not such a number; -2 if it is positive but
 * rounds to 0 ms. */
int parse_seconds(const char *s, int64_t *ms);
/* $ZKR_SERVERS if set and not empty, else 127.0.0.1:2181. */
const char *default_servers(void);

/* The length of the valid UTF-8 sequence at @p (1 for ASCII), or 0 if the
 * byte at @p does not start one (overlong forms, surrogates and code
 * points above U+10FFFF are invalid); *cp receives the code point. */
int utf8_seq(const unsigned char *p, uint32_t *cp);
/* @s made safe to print in a message: control characters (C0, DEL, C1),
 * invalid UTF-8 bytes and the backslash become \n, \t, \r, \\ or \xNN;
 * valid printable UTF-8 stays as is. The result lives until four more
 * calls; NULL gives "(null)". */
const char *esc(const char *s);
/* @s as a JSON string literal on @f: valid UTF-8 as is; '"', '\\' and
 * control characters (U+0000-001F, U+007F-009F) escaped as JSON requires;
 * each byte that is not part of valid UTF-8 as \u00XX, XX its value (so
 * invalid bytes read as the Latin-1 characters of the same value). */
void json_string(FILE *f, const char *s);

#endif
