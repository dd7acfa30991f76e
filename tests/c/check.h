/* A tiny test harness for the C suites: CHECK records a pass or prints the
 * failure with its location; check_finish prints the closing line
 * "N passed, N failed" and gives the exit status. */
#ifndef CONCH_TEST_CHECK_H
#define CONCH_TEST_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "conch.h"

static int check_passed, check_failed;

static bool check_at(bool ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool check_at(bool ok, const char *file, int line, const char *fmt, ...) {
  if (ok) {
    check_passed++;
    return true;
  }
  check_failed++;
  fprintf(stderr, "FAIL %s:%d: ", file, line);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (last error: \"%s\")\n", conch_last_error());
  return false;
}

/* CHECK(condition, printf-style description of what was expected). */
#define CHECK(cond, ...) check_at((cond), __FILE__, __LINE__, __VA_ARGS__)

/* SETUP(condition, description): a step a test needs (a scratch directory)
 * but does not test. Its failure is a failure; its success is not a pass. */
#define SETUP(cond, ...) ((cond) ? true : check_at(false, __FILE__, __LINE__, __VA_ARGS__))

/* Strings equal (NULL equals only NULL). */
static bool str_eq(const char *a, const char *b) {
  if (a == NULL || b == NULL) return a == b;
  return strcmp(a, b) == 0;
}

static bool check_str_at(const char *actual, const char *expected, const char *what,
                         const char *file, int line) {
  return check_at(str_eq(actual, expected), file, line, "%s: expected \"%s\", got \"%s\"", what,
                  expected ? expected : "(null)", actual ? actual : "(null)");
}
#define CHECK_STR(actual, expected, what) check_str_at((actual), (expected), (what), __FILE__, __LINE__)

/* A status code as expected; `rc` may be a call (evaluated once). */
static bool check_rc_at(int rc, int expected, const char *what, const char *file, int line) {
  return check_at(rc == expected, file, line, "%s: expected status %d, got %d", what, expected, rc);
}
#define CHECK_RC(rc, expected, what) check_rc_at((rc), (expected), (what), __FILE__, __LINE__)

static int check_finish(void) {
  printf("%d passed, %d failed\n", check_passed, check_failed);
  return check_failed == 0 && check_passed > 0 ? 0 : 1;
}

#endif
