/* zkr-ls --prometheus -o FILE (prom-file.c): the metrics replace FILE
 * atomically. */
#ifndef ZKR_TOOLS_PROM_FILE_H
#define ZKR_TOOLS_PROM_FILE_H

#include "prom.h"

/* prom_write() into @file, atomically (renamed over it once complete);
 * through a symbolic link, the file it leads to. Only a regular file is
 * replaced. 0, or -1 (said). */
int prom_write_file(const char *file, const struct prom_result *sc);

#endif
