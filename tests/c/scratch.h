/* Removes the scratch directories the C tests make. Include after defining
 * _GNU_SOURCE (for nftw). */
#ifndef CONCH_TEST_SCRATCH_H
#define CONCH_TEST_SCRATCH_H

#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static int remove_entry(const char *path, const struct stat *st, int kind, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  int rc = kind == FTW_DP ? rmdir(path) : unlink(path);
  if (rc != 0) perror(path);
  return rc;
}

/* Removes `dir` and everything in it. A cleanup is not a test, so it never
 * counts as a pass; failing to clean up counts as a failure (the leftover
 * would go unnoticed in /tmp). */
static void remove_tree(const char *dir) {
  if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
    check_failed++;
    fprintf(stderr, "FAIL: could not remove the scratch directory %s\n", dir);
  }
}

#endif
