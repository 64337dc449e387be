/*
 * zkr-ls --prometheus -o FILE (see prom-file.h): the metrics written into
 * a temporary file beside FILE and renamed over it once complete, so that
 * a reader (node_exporter's textfile collector) sees the old file or the
 * new one, never a part; through a symbolic link, the file it leads to.
 *
 * Owns: the temporary file. Must not touch: anything but a regular file
 * (a device, a FIFO, a socket or a directory is refused).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prom-file.h"

/* The file that -o @file writes: @file itself, or, if it is a symbolic
 * link, the file it leads to (a relative link read from the link's
 * directory), which need not exist yet: the link stays, as with a plain
 * write through it. NULL (said) if the links loop or nest more than 40
 * deep, or out of memory. */
static char *output_target(const char *file) {
  char *cur = strdup(file);
  for (int hops = 0; cur; hops++) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
      return cur; /* not there (created), or not a link */
    if (hops == 40) {
      fprintf(stderr, "%s: cannot write %s: %s\n", prog, esc(file),
              strerror(ELOOP));
      free(cur);
      return NULL;
    }
    size_t cap = (size_t)st.st_size + 2; /* a /proc link says 0 */
    char *link = NULL;
    ssize_t n = -1;
    for (;;) {
      free(link);
      link = malloc(cap);
      if (!link)
        break;
      n = readlink(cur, link, cap);
      if (n < 0 || (size_t)n < cap)
        break;
      cap *= 2; /* it grew meanwhile */
    }
    if (!link || n < 0) {
      if (link)
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, esc(file),
                strerror(errno));
      else
        fprintf(stderr, "%s: out of memory\n", prog);
      free(link);
      free(cur);
      return NULL;
    }
    link[n] = '\0';
    const char *slash = strrchr(cur, '/');
    if (link[0] == '/' || !slash) {
      free(cur);
      cur = link;
      continue;
    }
    size_t dl = (size_t)(slash - cur) + 1; /* the directory, with its '/' */
    char *next = malloc(dl + (size_t)n + 1);
    if (next) {
      memcpy(next, cur, dl);
      memcpy(next + dl, link, (size_t)n + 1);
    }
    free(link);
    free(cur);
    cur = next;
  }
  fprintf(stderr, "%s: out of memory\n", prog);
  return NULL;
}

/* 0 if @target, the file -o writes, may be replaced: it is a regular file
 * or does not exist; else -1 (said): the metrics replace a file, never a
 * device, a FIFO, a socket or a directory. */
static int replaceable(const char *file, const char *target) {
  struct stat st;
  if (lstat(target, &st) != 0 || S_ISREG(st.st_mode))
    return 0;
  if (strcmp(file, target) == 0)
    fprintf(stderr, "%s: cannot write %s: not a regular file\n", prog,
            esc(file));
  else
    fprintf(stderr,
            "%s: cannot write %s: %s, where it leads, is not a "
            "regular file\n",
            prog, esc(file), esc(target));
  return -1;
}

/* The metrics into @file, atomically: a temporary file in the same
 * directory, renamed over it once complete, so that a reader (the
 * textfile collector) sees the old file or the new one, never a part.
 * Through a symbolic link, the file it leads to is replaced (in that
 * file's directory). Only a regular file is replaced. 0, or -1 (said). */
int prom_write_file(const char *file, const struct prom_result *sc) {
  char *target = output_target(file);
  if (!target)
    return -1;
  if (replaceable(file, target) != 0) {
    free(target);
    return -1;
  }
  size_t len = strlen(target) + 16;
  char *tmp = malloc(len);
  if (!tmp) {
    fprintf(stderr, "%s: out of memory\n", prog);
    free(target);
    return -1;
  }
  snprintf(tmp, len, "%s.tmp.XXXXXX", target);
  int fd = mkstemp(tmp);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, esc(tmp),
            strerror(errno));
    if (fd >= 0) {
      close(fd);
      unlink(tmp);
    }
    free(tmp);
    free(target);
    return -1;
  }
  /* mkstemp() made it 0600: give it the mode a new file would get */
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  prom_write(f, sc);
  int bad = fflush(f) != 0 || ferror(f) || fsync(fd) != 0;
  int e = errno;
  if (fclose(f) != 0 && !bad) {
    bad = 1;
    e = errno;
  }
  /* (again: it may have been replaced meanwhile) */
  int refused = !bad && replaceable(file, target) != 0;
  if (!bad && !refused && rename(tmp, target) != 0) {
    bad = 1;
    e = errno;
  }
  if (bad)
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, esc(file), strerror(e));
  if (bad || refused)
    unlink(tmp);
  free(tmp);
  free(target);
  return bad || refused ? -1 : 0;
}
