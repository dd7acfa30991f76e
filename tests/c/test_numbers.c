/* Numeric arguments are checked by the core's parser of each option, as in
 * every face: a timeout past the core's bound (UINT64_MAX milliseconds
 * included) is CONCH_ERR_INVALID_ARG with a message naming the field, never
 * a panic, an overflow or a silent clamp; the largest accepted value works;
 * counts as large as size_t goes are valid ("all"). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* The core's bound: 2^31 - 1 ms (about 24 days). */
#define MAX_TIMEOUT_MS UINT64_C(2147483647)

static void expect_refused(int rc, const char *what, const char *field) {
  CHECK_RC(rc, CONCH_ERR_INVALID_ARG, what);
  CHECK(strstr(conch_last_error(), field) != NULL, "%s: the message names %s", what, field);
}

static void test_shell_run(void) {
  conch_shell_options so = {0};
  so.snapshot = "none";
  so.max_bytes = SIZE_MAX; /* a huge bound is a bound */
  conch_shell *sh = conch_shell_new(&so);
  if (!CHECK(sh != NULL, "conch_shell_new with max_bytes SIZE_MAX")) return;
  const uint64_t bad[] = {UINT64_MAX, MAX_TIMEOUT_MS + 1, UINT64_C(1) << 63};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    conch_run_options o = {0};
    o.command = "echo never";
    o.timeout_ms = bad[i];
    conch_bash_result *r = NULL;
    expect_refused(conch_shell_run(sh, &o, NULL, NULL, &r), "conch_shell_run, huge timeout_ms",
                   "opts->timeout_ms");
    CHECK(r == NULL, "out untouched");
  }
  conch_run_options o = {0};
  o.command = "echo ok";
  o.timeout_ms = MAX_TIMEOUT_MS;
  o.head_lines = SIZE_MAX;
  o.tail_lines = SIZE_MAX;
  conch_bash_result *r = NULL;
  CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_OK, "the largest timeout, huge counts");
  if (r != NULL) {
    CHECK_STR(r->output, "ok\n", "it runs");
    CHECK(!r->timed_out, "not timed out");
  }
  conch_bash_result_free(r);
  conch_shell_free(sh);
}

static void test_execute_and_pty(void) {
  conch_execute_options eo = {0};
  eo.command = "echo never";
  eo.timeout_ms = UINT64_MAX;
  conch_bash_result *r = NULL;
  expect_refused(conch_execute_shell(&eo, NULL, NULL, &r), "conch_execute_shell, UINT64_MAX",
                 "opts->timeout_ms");
  /* The value as the host gave it, not as a float (1.8446744073709552e19). */
  CHECK(strstr(conch_last_error(), "got 18446744073709551615") != NULL,
        "the message shows UINT64_MAX as given: %s", conch_last_error());
  CHECK(r == NULL, "out untouched");

  conch_pty *pty = conch_pty_new();
  if (!CHECK(pty != NULL, "conch_pty_new")) return;
  conch_pty_options po = {0};
  po.command = "echo never";
  po.timeout_ms = UINT64_MAX;
  conch_pty_result *pr = NULL;
  expect_refused(conch_pty_start(pty, &po, NULL, NULL, &pr), "conch_pty_start, UINT64_MAX",
                 "opts->timeout_ms");
  CHECK(pr == NULL, "out untouched");
  /* Sizes are clamped by the core: the largest u16 is the largest terminal. */
  po.timeout_ms = 0;
  po.command = "tput cols";
  po.cols = UINT16_MAX;
  po.rows = UINT16_MAX;
  CHECK_RC(conch_pty_start(pty, &po, NULL, NULL, &pr), CONCH_OK, "conch_pty_start, huge size");
  CHECK(pr != NULL && strstr(pr->output, "400") != NULL, "clamped to 400 columns: \"%s\"",
        pr ? pr->output : "");
  conch_pty_result_free(pr);
  conch_pty_free(pty);
}

static void test_tool(void) {
  conch_tool_options to = {0};
  to.update_interval_ms = UINT64_MAX;
  CHECK(conch_tool_new(&to) == NULL, "conch_tool_new, update_interval_ms UINT64_MAX");
  CHECK(strstr(conch_last_error(), "opts->update_interval_ms") != NULL, "the message names it");
  to.update_interval_ms = MAX_TIMEOUT_MS;
  conch_tool *tool = conch_tool_new(&to);
  CHECK(tool != NULL, "the largest interval is accepted");
  conch_tool_free(tool);
}

int main(void) {
  test_shell_run();
  test_execute_and_pty();
  test_tool();
  conch_close_sessions(NULL);
  return check_finish();
}
