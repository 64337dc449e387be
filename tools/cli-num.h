/* The tools' numbers (cli-num.c): plain decimals and seconds as the
 * options take them, and the monotonic clock. */
#ifndef ZKR_TOOLS_CLI_NUM_H
#define ZKR_TOOLS_CLI_NUM_H

#include <stdint.h>

/* A plain decimal integer (digits only, no sign, space or base prefix) in
 * [lo, hi] into *out; 0, or -1 if @s is not one. */
int parse_long(const char *s, long lo, long hi, long *out);
/* The largest number of seconds parse_seconds() takes (about 31.7
 * years), for messages: "at most " SECONDS_MAX_TEXT. */
#define SECONDS_MAX 1000000000
#define SECONDS_MAX_TEXT "1000000000"
/* Seconds as a plain decimal ("2", "0.5": digits with an optional
 * fraction, at most SECONDS_MAX) into milliseconds, rounded to the
 * nearest. Returns 0; -1 if @s is not such a number (also when it is
 * over SECONDS_MAX); -2 if it is positive but rounds to 0 ms. */
int parse_seconds(const char *s, int64_t *ms);
/* The monotonic clock in milliseconds. */
int64_t now_ms(void);

#endif
