/* The tools' option and number parsing and their message text
 * (tools/cli*.c, linked as the tools link them; exit() is caught):
 * parse_long and parse_seconds against references and in round trips
 * (format, then parse gives the number back); run_opt and seconds_opt
 * (--max-hold, --grace, --yield-after) take exactly the values the parsers
 * take, and their usage errors are whole (the argument escaped, never cut) and
 * exit 64; getopt_long's complaints become one line that names the option;
 * esc() output has no control characters, is valid UTF-8 and unescapes to the
 * input; json_string() writes a JSON string that decodes to the input (invalid
 * bytes as Latin-1); utf8_seq agrees with a reference decoder.
 *
 * Input: 1 byte (what to fuzz), then NUL-separated strings. */
#include "config.h"

#include <getopt.h>
#include <limits.h>
#include <setjmp.h>

#include "cli.h"
#include "fuzz.h"

const char *prog = "zkr-fuzz";

/* cli*.c are compiled with -Dexit=fuzz_exit: a usage error lands here. */
static jmp_buf exit_jmp;
static int exit_armed;
static int exit_status;
void fuzz_exit(int status) __attribute__((noreturn));
void fuzz_exit(int status) {
  if (!exit_armed) {
    fprintf(stderr, "exit(%d) outside a fuzzed call\n", status);
    abort();
  }
  exit_status = status;
  longjmp(exit_jmp, 1);
}

/* stdout and stderr into memory while the tools' code runs. */
static FILE *real_out, *real_err;
static char *out_buf, *err_buf;
static size_t out_len, err_len;

static void capture(void) {
  real_out = stdout;
  real_err = stderr;
  stdout = open_memstream(&out_buf, &out_len);
  stderr = open_memstream(&err_buf, &err_len);
  if (!stdout || !stderr)
    abort();
}

static void release(void) {
  fclose(stdout);
  fclose(stderr);
  stdout = real_out;
  stderr = real_err;
}

static void drop(void) {
  free(out_buf);
  free(err_buf);
  out_buf = err_buf = NULL;
}

/* Runs run_opt(o, c, arg) with its output captured: 1 if it took the
 * value, 0 if it did not know the option, -status if it exited. */
static int try_run_opt(struct run_opts *o, int c, const char *arg) {
  capture();
  exit_armed = 1;
  volatile int r;
  if (setjmp(exit_jmp) == 0)
    r = run_opt(o, c, arg);
  else
    r = -exit_status;
  exit_armed = 0;
  release();
  return r;
}

/* ---- references ---- */

/* parse_long's contract: digits only, a value in [lo, hi]. */
static int ref_long(const char *s, long lo, long hi, long *out) {
  if (!*s)
    return -1;
  unsigned long long v = 0;
  int big = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    unsigned long long d = (unsigned long long)(*p - '0');
    if (big || v > ((unsigned long long)LONG_MAX - d) / 10)
      big = 1; /* past LONG_MAX; keep checking the digits */
    else
      v = v * 10 + d;
  }
  if (big || (long)v < lo || (long)v > hi)
    return -1;
  *out = (long)v;
  return 0;
}

/* parse_seconds's contract: DIGITS[.DIGITS], at most 10^9 s, rounded to
 * the nearest millisecond (halves up); -2 if not 0 but rounds to 0. */
static int ref_seconds(const char *s, int64_t *ms) {
  size_t w = strspn(s, "0123456789");
  if (w == 0)
    return -1;
  const char *frac = "";
  size_t f = 0;
  if (s[w] == '.') {
    frac = s + w + 1;
    f = strspn(frac, "0123456789");
    if (f == 0 || frac[f] != '\0')
      return -1;
  } else if (s[w] != '\0') {
    return -1;
  }
  /* the whole seconds, without leading zeros */
  size_t z = 0;
  while (z + 1 < w && s[z] == '0')
    z++;
  if (w - z > 10)
    return -1;
  int64_t whole = 0;
  for (size_t i = z; i < w; i++)
    whole = whole * 10 + (s[i] - '0');
  if (whole > 1000000000)
    return -1;
  int64_t m = 0;
  for (size_t i = 0; i < 3; i++)
    m = m * 10 + (i < f ? frac[i] - '0' : 0);
  int64_t v = whole * 1000 + m + (f > 3 && frac[3] >= '5');
  if (v > INT64_C(1000000000000))
    return -1;
  int nonzero = whole > 0 || strspn(frac, "0") < f;
  if (v == 0 && nonzero)
    return -2;
  *ms = v;
  return 0;
}

/* Undo esc(): \n \t \r \\ \xNN. 0 if @e is not something esc() writes. */
static int unesc(const char *e, char *out) {
  size_t k = 0;
  for (const char *p = e; *p;) {
    if (*p != '\\') {
      out[k++] = *p++;
      continue;
    }
    p++;
    if (*p == 'n' || *p == 't' || *p == 'r' || *p == '\\') {
      out[k++] = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'r' ? '\r' : '\\';
      p++;
    } else if (*p == 'x' && strspn(p + 1, "0123456789abcdef") >= 2) {
      char hex[3] = {p[1], p[2], 0};
      out[k++] = (char)strtol(hex, NULL, 16);
      p += 3;
    } else {
      return 0;
    }
  }
  out[k] = '\0';
  return 1;
}

static size_t put_utf8(char *out, uint32_t cp) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xe0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (char)(0xf0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  out[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* Decode the JSON string literal @j (all of it) into UTF-8 at @out; 0 if
 * it is not a valid one (RFC 8259: no raw control characters, valid
 * UTF-8, only the defined escapes). */
static int json_decode(const char *j, size_t n, char *out) {
  if (n < 2 || j[0] != '"' || j[n - 1] != '"')
    return 0;
  size_t k = 0;
  for (size_t i = 1; i < n - 1;) {
    unsigned char c = (unsigned char)j[i];
    if (c < 0x20 || c == '"')
      return 0;
    if (c != '\\') {
      uint32_t cp;
      int l = fuzz_utf8((const unsigned char *)j + i, &cp);
      if (l == 0 || i + (size_t)l > n - 1)
        return 0;
      memcpy(out + k, j + i, (size_t)l);
      k += (size_t)l;
      i += (size_t)l;
      continue;
    }
    if (i + 1 >= n - 1)
      return 0;
    char e = j[i + 1];
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e && simple) {
      out[k++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
      i += 2;
    } else if (e == 'u' && i + 6 <= n - 1 &&
               strspn(j + i + 2, "0123456789abcdefABCDEF") >= 4) {
      char hex[5] = {j[i + 2], j[i + 3], j[i + 4], j[i + 5], 0};
      uint32_t cp = (uint32_t)strtoul(hex, NULL, 16);
      if (cp >= 0xd800 && cp <= 0xdfff)
        return 0; /* json_string never writes surrogates */
      k += put_utf8(out + k, cp);
      i += 6;
    } else {
      return 0;
    }
  }
  out[k] = '\0';
  return 1;
}

/* ---- the modes ---- */

static const long ranges[][2] = {
    {0, LONG_MAX},
    {1, INT_MAX},
    {ZKR_SESSION_TIMEOUT_MIN, ZKR_SESSION_TIMEOUT_MAX},
    {1, ZKR_SEMAPHORE_MAX},
    {0, 0}};

static void numbers(const char *s) {
  for (size_t i = 0; i < sizeof ranges / sizeof *ranges; i++) {
    long got = -7, want = -7;
    int r = parse_long(s, ranges[i][0], ranges[i][1], &got);
    int e = ref_long(s, ranges[i][0], ranges[i][1], &want);
    CHECK(r == e && got == want,
          "parse_long('%s', %ld, %ld): %d %ld, not %d %ld", s, ranges[i][0],
          ranges[i][1], r, got, e, want);
    if (r == 0) {
      char buf[32];
      snprintf(buf, sizeof buf, "%ld", got);
      long back = -7;
      CHECK(parse_long(buf, ranges[i][0], ranges[i][1], &back) == 0 &&
                back == got,
            "'%s' back: %ld", buf, back);
    }
  }
  int64_t ms = -7, want = -7;
  int r = parse_seconds(s, &ms), e = ref_seconds(s, &want);
  CHECK(r == e && (r != 0 || ms == want),
        "parse_seconds('%s'): %d %lld, not %d %lld", s, r, (long long)ms, e,
        (long long)want);
  if (r == 0) {
    CHECK(ms >= 0 && ms <= INT64_C(1000000000000), "%lld ms", (long long)ms);
    char buf[48];
    snprintf(buf, sizeof buf, "%lld.%03lld", (long long)(ms / 1000),
             (long long)(ms % 1000));
    int64_t back = -7;
    CHECK(parse_seconds(buf, &back) == 0 && back == ms, "'%s' back: %lld", buf,
          (long long)back);
  }
}

/* run_opt takes what the parsers take; a refused value is a whole usage
 * message and exit status 64. */
static void one_opt(int c, const char *arg) {
  struct run_opts o;
  run_opts_init(&o);
  struct run_opts before = o;
  int r = try_run_opt(&o, c, arg);
  long l = 0;
  int64_t ms = 0;
  int good = 1;
  const char *what = NULL;
  char tail[128] = "";
  switch (c) {
  case OPT_SESSION:
    good = ref_long(arg, ZKR_SESSION_TIMEOUT_MIN, ZKR_SESSION_TIMEOUT_MAX,
                    &l) == 0;
    if (good)
      CHECK(o.session_ms == l, "session %ld", o.session_ms);
    what = "invalid session timeout";
    snprintf(tail, sizeof tail, "milliseconds, %d to %d",
             ZKR_SESSION_TIMEOUT_MIN, ZKR_SESSION_TIMEOUT_MAX);
    break;
  case OPT_CONNECT:
    good = ref_long(arg, 1, INT_MAX, &l) == 0;
    if (good)
      CHECK(o.connect_ms == l, "connect %ld", o.connect_ms);
    what = "invalid connect timeout";
    snprintf(tail, sizeof tail, "milliseconds, 1 to %d", INT_MAX);
    break;
  case OPT_KILL_AFTER:
    good = ref_seconds(arg, &ms) == 0;
    if (good)
      CHECK(o.kill_after_ms == ms, "kill-after %lld",
            (long long)o.kill_after_ms);
    what = "invalid --kill-after";
    snprintf(tail, sizeof tail,
             "seconds as a plain decimal, 0 or at least 0.001 (1 ms), at "
             "most " SECONDS_MAX_TEXT);
    break;
  case 's':
    CHECK(o.servers == arg, "servers");
    break;
  case OPT_ID:
    CHECK(o.id == arg, "id");
    break;
  case OPT_ACL:
    good = strcmp(arg, "open") == 0 || strcmp(arg, "creator") == 0;
    if (good)
      CHECK(o.acl_creator == (strcmp(arg, "creator") == 0), "acl %d",
            o.acl_creator);
    what = "invalid --acl";
    snprintf(tail, sizeof tail, "open or creator");
    break;
  case OPT_AUTH:
    good = strchr(arg, ':') != NULL && arg[0] != ':';
    if (good)
      CHECK(o.auth == arg, "auth");
    what = "invalid --auth";
    snprintf(tail, sizeof tail, "USER:PASSWORD (the digest scheme)");
    break;
  }
  if (good) {
    CHECK(r == 1, "run_opt(%d, '%s'): %d", c, arg, r);
    CHECK(err_len == 0, "a message for a good value: %s", err_buf);
  } else {
    CHECK(r == -EX_USAGE, "run_opt(%d, '%s'): %d, not exit 64", c, arg, r);
    CHECK(o.session_ms == before.session_ms &&
              o.connect_ms == before.connect_ms &&
              o.kill_after_ms == before.kill_after_ms &&
              o.acl_creator == before.acl_creator && o.auth == before.auth,
          "a refused value changed the options");
    /* the message, whole */
    const char *e = esc(arg);
    size_t need = strlen(prog) + strlen(what) + strlen(e) + strlen(tail) + 64;
    char *want = malloc(need);
    CHECK(want != NULL, "oom");
    snprintf(want, need,
             "%s: %s '%s': %s\nTry '%s --help' for more information.\n", prog,
             what, e, tail, prog);
    CHECK(strcmp(err_buf, want) == 0,
          "the message for '%s' (%zu bytes) is\n%s\nnot\n%s", arg, strlen(arg),
          err_buf, want);
    CHECK(fuzz_clean_text(err_buf), "the message is not clean text");
    free(want);
  }
  drop();
}

/* seconds_opt (the duration options of the lock control: --max-hold,
 * --grace, --yield-after) takes what parse_seconds takes, 0 only when allowed;
 * a refused value is a whole usage message, exit 64, and leaves the value as it
 * was. */
static void one_seconds(const char *name, int zero_ok, const char *arg) {
  int64_t got = -7, want = 0;
  capture();
  exit_armed = 1;
  volatile int r = 1;
  if (setjmp(exit_jmp) == 0)
    seconds_opt(name, arg, zero_ok, &got);
  else
    r = -exit_status;
  exit_armed = 0;
  release();
  int good = ref_seconds(arg, &want) == 0 && (want > 0 || zero_ok);
  if (good) {
    CHECK(r == 1 && got == want, "seconds_opt(%s, '%s'): %d %lld, not %lld",
          name, arg, r, (long long)got, (long long)want);
    CHECK(err_len == 0, "a message for a good value: %s", err_buf);
  } else {
    CHECK(r == -EX_USAGE && got == -7, "seconds_opt(%s, '%s'): %d %lld", name,
          arg, r, (long long)got);
    const char *e = esc(arg);
    size_t need = strlen(prog) + strlen(name) + strlen(e) + 200;
    char *w = malloc(need);
    CHECK(w != NULL, "oom");
    snprintf(w, need,
             "%s: invalid %s '%s': seconds as a plain decimal, %s0.001 (1 ms), "
             "at most " SECONDS_MAX_TEXT
             "\nTry '%s --help' for more information.\n",
             prog, name, e, zero_ok ? "0 or at least " : "at least ", prog);
    CHECK(strcmp(err_buf, w) == 0, "the message for '%s' is\n%s\nnot\n%s", arg,
          err_buf, w);
    CHECK(fuzz_clean_text(err_buf), "the message is not clean text");
    free(w);
  }
  drop();
}

static void text(const char *s) {
  /* utf8_seq agrees with the reference decoder */
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    uint32_t a = 0, b = 0;
    int n = utf8_seq(p, &a), m = fuzz_utf8(p, &b);
    CHECK(n == m && (n == 0 || a == b), "utf8_seq at byte %zu of '%s'",
          (size_t)(p - (const unsigned char *)s), s);
  }
  /* esc: clean, one line, and reversible */
  const char *e = esc(s);
  CHECK(fuzz_utf8_valid(e) && fuzz_clean_text(e) && !strchr(e, '\n'),
        "esc('%s') = '%s'", s, e);
  char *back = malloc(strlen(e) + 1);
  CHECK(back && unesc(e, back) && strcmp(back, s) == 0,
        "esc('%s') = '%s' does not unescape", s, e);
  free(back);
  CHECK(strcmp(esc(NULL), "(null)") == 0, "esc(NULL)");
  /* json_string: a valid JSON string of the input, invalid bytes read as
   * Latin-1 */
  char *j = NULL;
  size_t jn = 0;
  FILE *f = open_memstream(&j, &jn);
  CHECK(f != NULL, "oom");
  json_string(f, s);
  fclose(f);
  size_t n = strlen(s);
  char *dec = malloc(jn + 1), *want = malloc(2 * n + 1);
  CHECK(dec && want, "oom");
  size_t k = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    uint32_t cp;
    int l = fuzz_utf8(p, &cp);
    if (l == 0) {
      k += put_utf8(want + k, *p);
      p++;
    } else {
      memcpy(want + k, p, (size_t)l);
      k += (size_t)l;
      p += l;
    }
  }
  want[k] = '\0';
  CHECK(json_decode(j, jn, dec), "json_string('%s') = %s is not JSON", s, j);
  CHECK(strcmp(dec, want) == 0, "json_string('%s') = %s decodes to '%s'", s, j,
        dec);
  free(dec);
  free(want);
  free(j);
}

/* The options of zkr-lock and zkr-elect as they parse them: run_opt, then
 * option_error for the rest, which must be one clean line naming the
 * option, and exit 64. */
static void options(char **argv, int argc) {
  static const struct option longopts[] = {
      CLI_RUN_LONGOPTS,
      {"timeout", required_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  struct run_opts o;
  run_opts_init(&o);
  optind = 0; /* glibc: start afresh */
  opterr = 0;
  verbose = 0;
  capture();
  exit_armed = 1;
  const char *volatile last = NULL;
  volatile int last_optopt = -1;
  volatile int exited = 0;
  if (setjmp(exit_jmp) != 0) {
    exited = 1;
  } else {
    int c;
    while ((c = getopt_long(argc, argv, ":s:vVt:h", longopts, NULL)) != -1) {
      if (c == 't' || c == 'h' || run_opt(&o, c, optarg))
        continue;
      last = optind > 0 ? argv[optind - 1] : "";
      last_optopt = optopt;
      option_error(c, argv, longopts);
    }
  }
  exit_armed = 0;
  release();
  if (exited && exit_status != 0) {
    CHECK(exit_status == EX_USAGE, "exit %d", exit_status);
    CHECK(fuzz_clean_text(err_buf), "not clean: %s", err_buf);
    const char *nl = strchr(err_buf, '\n');
    char tryline[128];
    snprintf(tryline, sizeof tryline, "Try '%s --help' for more information.\n",
             prog);
    CHECK(nl && strcmp(nl + 1, tryline) == 0, "not two lines: %s", err_buf);
    CHECK(strncmp(err_buf, "zkr-fuzz: ", 10) == 0, "%s", err_buf);
    /* an unknown long option (optopt 0) is named as written, up to its
     * '='; an unknown '-' in a cluster ("-v-x") after a long option also
     * prints "unknown option '--'" and is not one */
    if (last && last_optopt == 0 && strncmp(last, "--", 2) == 0 &&
        strncmp(err_buf, "zkr-fuzz: unknown option '--", 28) == 0) {
      char *name = strndup(last, strcspn(last, "="));
      CHECK(name != NULL, "oom");
      const char *e = esc(name);
      size_t el = strlen(e);
      CHECK(strncmp(err_buf + 26, e, el) == 0 &&
                strncmp(err_buf + 26 + el, "'\n", 2) == 0,
            "'%s' named as: %s", last, err_buf);
      free(name);
    }
  }
  drop();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int mode = data[0] % 4;
  data++;
  size--;
  /* the strings */
  char *argv[34];
  int argc = 0;
  argv[argc++] = (char *)"zkr-fuzz";
  while (argc < 33) {
    const uint8_t *rest;
    size_t rest_size;
    argv[argc++] = fuzz_split(data, size, &rest, &rest_size);
    if (!rest)
      break;
    data = rest;
    size = rest_size;
  }
  argv[argc] = NULL;
  char *saved[34];
  memcpy(saved, argv, sizeof argv); /* getopt_long permutes argv */
  switch (mode) {
  case 0:
    numbers(argv[1]);
    break;
  case 1: {
    static const int opts[] = {OPT_SESSION, OPT_CONNECT, OPT_KILL_AFTER, 's',
                               OPT_ID,      OPT_ACL,     OPT_AUTH};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
      one_opt(opts[i], argv[1]);
    one_seconds("--max-hold", 0, argv[1]);
    one_seconds("--grace", 1, argv[1]);
    one_seconds("--yield-after", 1, argv[1]);
    break;
  }
  case 2:
    text(argv[1]);
    break;
  case 3:
    options(argv, argc);
    break;
  }
  for (int i = 1; i < argc; i++)
    free(saved[i]);
  return 0;
}
