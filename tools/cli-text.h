/* Untrusted text made safe to show (cli-text.c): UTF-8, the escaping of
 * text for messages and JSON, and zkr's contender data. */
#ifndef ZKR_TOOLS_CLI_TEXT_H
#define ZKR_TOOLS_CLI_TEXT_H

#include <stdint.h>
#include <stdio.h>

/* The length of the valid UTF-8 sequence at @p (1 for ASCII), or 0 if the
 * byte at @p does not start one (overlong forms, surrogates and code
 * points above U+10FFFF are invalid); *cp receives the code point. */
int utf8_seq(const unsigned char *p, uint32_t *cp);
/* @s made safe to print in a message: control characters (C0, DEL, C1),
 * invalid UTF-8 bytes and the backslash become \n, \t, \r, \\ or \xNN;
 * valid printable UTF-8 stays as is. The result lives until four more
 * calls in the same thread; NULL gives "(null)". */
const char *esc(const char *s);
/* @s as a JSON string literal on @f: valid UTF-8 as is; '"', '\\' and
 * control characters (U+0000-001F, U+007F-009F) escaped as JSON requires;
 * each byte that is not part of valid UTF-8 as \u00XX, XX its value (so
 * invalid bytes read as the Latin-1 characters of the same value). */
void json_string(FILE *f, const char *s);

/* Fields of zkr's node data "host=H pid=P id=I" (id last: it may hold
 * spaces). */
struct owner {
  char host[256];
  long pid;
  int set; /* a multi-lock set's node: the set's size; 0: not one */
  char id[512];
};
/* @data's fields into *@o; 0 if @data is not in that form. An id longer
 * than the field is cut between two UTF-8 characters. */
int parse_owner(const char *data, struct owner *o);
/* ,"host":H,"pid":P,"id":I on @f: the members of a JSON object. */
void json_owner(FILE *f, const struct owner *o);

#endif
