/* A call made from inside a run's own callback on the same handle would
 * wait for the run that is calling it back: a nested conch_shell_run fails
 * at once with CONCH_ERR_INVALID_ARG and a message; a nested
 * conch_tool_execute on the same tool is the tool's failed outcome
 * (CONCH_ERR_TOOL, with a result whose text says why, as the core words
 * it). The outer run goes on and returns its result. A run on another
 * shell from the same callback works; a shell freed from its own callback
 * stops the run; a nested conch_pty_start is "PTY session already running".
 * Each call is guarded by an alarm: a hang fails the suite after 10 s
 * instead of stalling it. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "FAIL: a call from inside its own callback did not return within 10 s\n";
  ssize_t ignored = write(2, msg, sizeof msg - 1);
  (void)ignored;
  _exit(1);
}

/* What the callback saw of its nested calls. */
struct nested {
  conch_shell *shell;   /* the shell whose callback this is */
  conch_shell *other;   /* another shell, free to run */
  conch_tool *tool;     /* the tool whose update callback this is */
  int calls, rc, other_rc;
  char error[512];
  char text[512];
  char other_output[64];
};

static void remember_error(struct nested *n) {
  snprintf(n->error, sizeof n->error, "%s", conch_last_error());
}

static void shell_chunk(void *user, const char *utf8, size_t len) {
  (void)utf8;
  (void)len;
  struct nested *n = user;
  if (n->calls++ > 0) return;
  conch_run_options o = {0};
  o.command = "echo nested";
  conch_bash_result *r = NULL;
  n->rc = conch_shell_run(n->shell, &o, NULL, NULL, &r);
  remember_error(n);
  conch_bash_result_free(r); /* NULL unless the nested run wrongly ran */
  if (n->other != NULL) {
    o.command = "echo other";
    conch_bash_result *ok = NULL;
    n->other_rc = conch_shell_run(n->other, &o, NULL, NULL, &ok);
    if (ok != NULL) snprintf(n->other_output, sizeof n->other_output, "%s", ok->output);
    conch_bash_result_free(ok);
  }
}

static void test_shell_run_from_its_own_callback(void) {
  conch_shell_options so = {0};
  so.snapshot = "none";
  conch_shell *sh = conch_shell_new(&so);
  conch_shell *other = conch_shell_new(&so);
  if (!CHECK(sh != NULL && other != NULL, "conch_shell_new")) {
    conch_shell_free(sh);
    conch_shell_free(other);
    return;
  }
  struct nested n = {.shell = sh, .other = other, .rc = 1, .other_rc = 1};
  conch_run_options o = {0};
  o.command = "echo outer";
  conch_bash_result *r = NULL;
  alarm(10);
  int rc = conch_shell_run(sh, &o, shell_chunk, &n, &r);
  alarm(0);
  CHECK_RC(rc, CONCH_OK, "the outer run returns its result");
  CHECK(r != NULL && str_eq(r->output, "outer\n"), "the outer run's output");
  CHECK_RC(n.rc, CONCH_ERR_INVALID_ARG, "a nested run on the same shell is refused");
  /* In words every face shares: no other face's API name. */
  CHECK(strncmp(n.error, "a run was started from inside a callback of a run on the same shell:",
                68) == 0,
        "the message says why: \"%s\"", n.error);
  CHECK_RC(n.other_rc, CONCH_OK, "a run on another shell from the callback works");
  CHECK_STR(n.other_output, "other\n", "the other shell's output");
  conch_bash_result_free(r);

  /* The shell is still usable after the refused call. */
  o.command = "echo after";
  r = NULL;
  alarm(10);
  CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_OK, "a run after the callback");
  alarm(0);
  CHECK(r != NULL && str_eq(r->output, "after\n"), "its output");
  conch_bash_result_free(r);
  conch_shell_free(other);
  conch_shell_free(sh);
}

static void tool_update(void *user, const char *utf8, size_t len) {
  (void)utf8;
  (void)len;
  struct nested *n = user;
  if (n->calls++ > 0) return;
  conch_tool_result *r = NULL;
  n->rc = conch_tool_execute(n->tool, "{\"command\": \"echo nested\"}", NULL, false, NULL, NULL, &r);
  remember_error(n);
  if (r != NULL) snprintf(n->text, sizeof n->text, "%s", r->text);
  conch_tool_result_free(r);
}

static void test_tool_call_from_its_own_update(void) {
  conch_tool_options to = {0};
  to.snapshot = "none";
  to.session_key = "c-reentrant";
  conch_tool *tool = conch_tool_new(&to);
  if (!CHECK(tool != NULL, "conch_tool_new")) return;
  struct nested n = {.tool = tool, .rc = 1};
  conch_tool_result *r = NULL;
  alarm(10);
  int rc = conch_tool_execute(tool, "{\"command\": \"echo outer\"}", NULL, false, tool_update, &n, &r);
  alarm(0);
  CHECK_RC(rc, CONCH_OK, "the outer call returns its result");
  CHECK(r != NULL && str_eq(r->text, "outer"), "the outer call's text: \"%s\"", r ? r->text : "");
  CHECK(n.calls > 0, "the update callback ran");
  CHECK_RC(n.rc, CONCH_ERR_TOOL, "a nested call on the same tool fails");
  CHECK(strncmp(n.error, "a call was made from inside a callback of a run on the same tool:", 65) == 0,
        "the message says why: \"%s\"", n.error);
  CHECK(strstr(n.text, "callback") != NULL, "so does the model's text: \"%s\"", n.text);
  conch_tool_result_free(r);
  conch_tool_free(tool);
}

static void free_own_shell(void *user, const char *utf8, size_t len) {
  (void)utf8;
  (void)len;
  conch_shell **sh = user;
  if (*sh == NULL) return;
  conch_shell_free(*sh); /* the run holds its own reference */
  *sh = NULL;
}

/* Freeing the shell from its own callback closes it: the run is stopped at
 * once (it does not wait for itself) and returns its result. */
static void test_shell_free_from_its_own_callback(void) {
  conch_shell_options so = {0};
  so.snapshot = "none";
  conch_shell *sh = conch_shell_new(&so);
  if (!CHECK(sh != NULL, "conch_shell_new")) return;
  conch_shell *held = sh;
  conch_run_options o = {0};
  o.command = "echo first; sleep 100";
  conch_bash_result *r = NULL;
  alarm(10);
  int rc = conch_shell_run(held, &o, free_own_shell, &sh, &r);
  alarm(0);
  CHECK(sh == NULL, "the callback freed the shell");
  CHECK(rc == CONCH_OK || rc == CONCH_ERR_CLOSED, "the run returns (status %d)", rc);
  if (rc == CONCH_OK) CHECK(r != NULL && r->cancelled, "stopped by the close");
  conch_bash_result_free(r);
}

struct pty_nested {
  conch_pty *pty;
  int calls, rc;
  char error[256];
};

static void pty_chunk(void *user, const char *utf8, size_t len) {
  (void)utf8;
  (void)len;
  struct pty_nested *n = user;
  if (n->calls++ > 0) return;
  conch_pty_options o = {0};
  o.command = "echo nested";
  conch_pty_result *r = NULL;
  n->rc = conch_pty_start(n->pty, &o, NULL, NULL, &r);
  snprintf(n->error, sizeof n->error, "%s", conch_last_error());
  conch_pty_result_free(r);
  conch_pty_kill(n->pty);
}

/* A start on the same terminal from its own callback: already running. */
static void test_pty_start_from_its_own_callback(void) {
  conch_pty *pty = conch_pty_new();
  if (!CHECK(pty != NULL, "conch_pty_new")) return;
  struct pty_nested n = {.pty = pty, .rc = 1};
  conch_pty_options o = {0};
  o.command = "echo outer; sleep 100";
  conch_pty_result *r = NULL;
  alarm(10);
  int rc = conch_pty_start(pty, &o, pty_chunk, &n, &r);
  alarm(0);
  CHECK_RC(rc, CONCH_OK, "the outer run returns its result");
  CHECK(r != NULL && r->cancelled, "stopped by the kill from the callback");
  CHECK_RC(n.rc, CONCH_ERR_INVALID_ARG, "a nested start is refused");
  CHECK_STR(n.error, "PTY session already running", "its message");
  conch_pty_result_free(r);
  conch_pty_free(pty);
}

int main(void) {
  signal(SIGALRM, on_alarm);
  test_shell_run_from_its_own_callback();
  test_tool_call_from_its_own_update();
  test_shell_free_from_its_own_callback();
  test_pty_start_from_its_own_callback();
  conch_close_sessions(NULL);
  return check_finish();
}
