/* The model's bash tool through the C API: the outcomes (success, non-zero
 * exit, timeout, blocked, aborted, bad cwd), the text the model reads and
 * its details JSON, head/tail extraction, truncation with an artifact the
 * store reads back, live updates, option errors; and the shared vectors
 * tests/vectors/tool.json and tool_definition.json (the definition for the
 * model, conch_tool_definition). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>

#include "check.h"
#include "chunks.h"
#include "scratch.h"
#include "vectors_tool.h"
#include "vectors_tool_definition.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char artifacts[] = "/tmp/conch-ctest-tool-XXXXXX";

static conch_tool *new_tool(bool interceptor) {
  const char *tools[] = {"read", "grep", "find", "edit", "write", NULL};
  conch_tool_options o = {0};
  o.artifacts_dir = artifacts;
  o.session_key = "ctest-tool";
  o.snapshot = "none";
  o.cwd = "/";
  o.tool_names = tools;
  o.interceptor = interceptor;
  o.update_interval_ms = 10;
  conch_tool *tool = conch_tool_new(&o);
  CHECK(tool != NULL, "conch_tool_new");
  return tool;
}

/* Runs one call; returns the status, the result in *out. */
static int call(conch_tool *tool, const char *args, conch_tool_result **out) {
  *out = NULL;
  return conch_tool_execute(tool, args, NULL, false, NULL, NULL, out);
}

static void test_outcomes(conch_tool *tool) {
  conch_tool_result *r;
  if (CHECK_RC(call(tool, "{\"command\": \"echo hi; pwd\"}", &r), CONCH_OK, "success")) {
    CHECK_STR(r->text, "hi\n/", "the model reads the output, run in the tool's cwd");
    CHECK(r->status == CONCH_OK && r->exit_status == 0, "status and exit status");
    CHECK(r->details_json == NULL && r->suggested_tool == NULL, "nothing more to say");
    CHECK(r->bash != NULL && r->bash->has_exit_code && r->bash->exit_code == 0, "the engine's result");
  }
  conch_tool_result_free(r);

  if (CHECK_RC(call(tool, "{\"command\": \"true\"}", &r), CONCH_OK, "no output"))
    CHECK_STR(r->text, "(no output)", "empty output reads (no output)");
  conch_tool_result_free(r);

  if (CHECK_RC(call(tool, "{\"command\": \"echo out; (exit 3)\"}", &r), CONCH_ERR_TOOL, "exit 3")) {
    CHECK_STR(r->text, "out\n\nCommand exited with code 3", "the status line follows the output");
    CHECK_STR(conch_last_error(), r->text, "the last error is the text too");
    CHECK(r->status == CONCH_ERR_TOOL && r->exit_status == 3, "exit status 3");
  }
  conch_tool_result_free(r);

  /* The partial output is asserted, so the deadline leaves the echo seconds. */
  if (CHECK_RC(call(tool, "{\"command\": \"echo before; sleep 100\", \"timeout\": 3}", &r),
               CONCH_ERR_TOOL, "timeout")) {
    CHECK(strncmp(r->text, "[Command timed out after 3 seconds]\n", 36) == 0, "timeout text: \"%s\"",
          r->text);
    CHECK(strstr(r->text, "before") != NULL, "partial output kept");
    CHECK(r->exit_status == 124, "exit status 124, got %d", r->exit_status);
    CHECK(r->bash != NULL && r->bash->timed_out, "the engine timed out");
  }
  conch_tool_result_free(r);

  if (CHECK_RC(call(tool, "{\"command\": \"pwd\", \"cwd\": \"nope-conch\"}", &r), CONCH_ERR_TOOL, "bad cwd")) {
    CHECK_STR(r->text, "Working directory does not exist: /nope-conch", "the cwd text");
    CHECK(r->bash == NULL && r->exit_status == 1, "nothing ran");
  }
  conch_tool_result_free(r);

  if (CHECK_RC(call(tool, "{\"command\": \"seq 1 100 | head -n 3\"}", &r), CONCH_OK, "head"))
    CHECK_STR(r->text, "1\n2\n3", "a trailing | head -n 3 is applied by conch");
  conch_tool_result_free(r);
  if (CHECK_RC(call(tool, "{\"command\": \"seq 1 100\", \"tail\": 2}", &r), CONCH_OK, "tail"))
    CHECK_STR(r->text, "99\n100", "an explicit tail argument");
  conch_tool_result_free(r);
}

static void test_blocked(void) {
  conch_tool *tool = new_tool(true);
  if (!tool) return;
  conch_tool_result *r;
  if (CHECK_RC(call(tool, "{\"command\": \"cat /etc/hostname\"}", &r), CONCH_ERR_BLOCKED, "blocked")) {
    CHECK(strncmp(r->text, "Blocked: ", 9) == 0 &&
              strstr(r->text, "\n\nOriginal command: cat /etc/hostname") != NULL,
          "the interceptor's text: \"%s\"", r->text);
    CHECK_STR(r->suggested_tool, "read", "the suggested tool");
    CHECK(r->bash == NULL && r->exit_status == 1, "nothing ran");
  }
  conch_tool_result_free(r);
  conch_tool_free(tool);
}

static void test_truncation_and_artifact(conch_tool *tool) {
  conch_tool_result *r;
  if (!CHECK_RC(call(tool, "{\"command\": \"seq 1 100000\"}", &r), CONCH_OK, "a flood")) return;
  CHECK(strstr(r->text, "100000\n\n[Showing lines ") != NULL && strstr(r->text, "artifact://") != NULL,
        "the notice names the artifact");
  CHECK(r->details_json != NULL && strstr(r->details_json, "\"artifactId\"") != NULL,
        "details_json carries the artifact id: %s", r->details_json ? r->details_json : "(null)");
  if (r->bash && r->bash->artifact_id) {
    conch_artifact_store *store = conch_artifact_store_new(artifacts);
    char *text = NULL;
    if (CHECK_RC(conch_artifact_store_read(store, r->bash->artifact_id, 99998, -1, &text), CONCH_OK,
                 "read the artifact"))
      CHECK_STR(text, "99999\n100000\n", "the artifact holds the whole output");
    conch_string_free(text);
    conch_artifact_store_free(store);
  } else {
    CHECK(false, "the flood has an artifact");
  }
  conch_tool_result_free(r);
}

/* Live updates: the tail so far, on the calling thread; a second thread
 * cancels the call once the first line showed. */
struct canceller {
  struct chunks *updates;
  conch_cancel_token *token;
};

static void *cancel_when_started(void *arg) {
  struct canceller *c = arg;
  if (wait_started(c->updates)) conch_cancel_token_cancel(c->token);
  return NULL;
}

static void test_updates_and_abort(conch_tool *tool) {
  struct chunks updates;
  chunks_init(&updates, "started");
  conch_cancel_token *token = conch_cancel_token_new();
  struct canceller c = {&updates, token};
  pthread_t t;
  pthread_create(&t, NULL, cancel_when_started, &c);
  conch_tool_result *r = NULL;
  int rc = conch_tool_execute(tool, "{\"command\": \"echo started; sleep 100\", \"timeout\": 30}", token,
                              false, on_chunk, &updates, &r);
  pthread_join(t, NULL);
  if (CHECK_RC(rc, CONCH_ERR_ABORTED, "aborted by the caller's token")) {
    CHECK(r->status == CONCH_ERR_ABORTED && r->exit_status == 130, "exit status 130, got %d", r->exit_status);
    CHECK(strstr(r->text, "started") != NULL, "the abort text keeps the output: \"%s\"", r->text);
  }
  CHECK(updates.calls >= 1 && strstr(updates.text, "started\n") != NULL, "live updates arrived");
  CHECK(!updates.wrong_thread && !updates.not_terminated, "updates on the calling thread, NUL-terminated");
  conch_tool_result_free(r);
  conch_cancel_token_free(token);
  chunks_destroy(&updates);
}

static void test_errors(conch_tool *tool) {
  conch_tool_result *r = NULL;
  CHECK_RC(conch_tool_execute(tool, "{not json", NULL, false, NULL, NULL, &r), CONCH_ERR_INVALID_ARG, "bad JSON");
  CHECK(strstr(conch_last_error(), "args_json") != NULL, "the error names args_json");
  CHECK_RC(conch_tool_execute(tool, "{\"cwd\": \"/\"}", NULL, false, NULL, NULL, &r), CONCH_ERR_INVALID_ARG,
           "no command");
  CHECK(r == NULL, "out untouched on error");

  conch_tool_options o = {0};
  o.interceptor = true;
  o.rules_json = "[{\"pattern\": \"(\", \"tool\": \"read\", \"message\": \"bad\"}]";
  CHECK(conch_tool_new(&o) == NULL, "a rule that does not compile");
  CHECK(strstr(conch_last_error(), "interceptor rule 0") != NULL, "the error names the rule: %s",
        conch_last_error());
  conch_tool *defaults = conch_tool_new(NULL);
  CHECK(defaults != NULL, "conch_tool_new(NULL) gives defaults");
  conch_tool_free(defaults);
}

/* `text` with "{cwd}" replaced by `cwd`, in `buf`. */
static const char *with_cwd(const char *text, const char *cwd, char *buf, size_t cap) {
  if (text == NULL) return NULL;
  size_t n = 0;
  for (const char *p = text; *p && n + 1 < cap;) {
    if (strncmp(p, "{cwd}", 5) == 0) {
      n += (size_t)snprintf(buf + n, cap - n, "%s", cwd);
      p += 5;
    } else {
      buf[n++] = *p++;
    }
  }
  buf[n < cap ? n : cap - 1] = '\0';
  return buf;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void tool_vectors(void) {
  for (size_t i = 0; i < COUNT(TOOL_CASES); i++) {
    const struct tool_case *c = &TOOL_CASES[i];
    char tmp[] = "/tmp/conch-ctest-vec-XXXXXX", cwd[PATH_MAX], art[PATH_MAX + 16], key[64];
    if (!SETUP(mkdtemp(tmp) != NULL && realpath(tmp, cwd) != NULL, "%s: a fresh cwd", c->name)) continue;
    snprintf(art, sizeof art, "%s/artifacts", cwd);
    snprintf(key, sizeof key, "ctest-tool-vectors-%zu", i);
    conch_tool_options o = {0};
    o.cwd = cwd;
    o.artifacts_dir = c->artifacts ? art : NULL;
    o.tool_names = c->tool_names;
    o.interceptor = c->interceptor;
    o.rules_json = c->rules_json;
    o.session_key = key;
    o.snapshot = "none";
    conch_tool *tool = conch_tool_new(&o);
    conch_tool_result *r = NULL;
    int rc = tool ? conch_tool_execute(tool, c->args_json, NULL, false, NULL, NULL, &r) : -100;
    if (CHECK_RC(rc, c->expect_status, c->name) && r != NULL) {
      char want[4096];
      if (c->text) CHECK_STR(r->text, with_cwd(c->text, cwd, want, sizeof want), c->name);
      if (c->text_starts_with) {
        with_cwd(c->text_starts_with, cwd, want, sizeof want);
        CHECK(strncmp(r->text, want, strlen(want)) == 0, "%s: text starts with \"%s\"", c->name, want);
      }
      if (c->text_ends_with) {
        with_cwd(c->text_ends_with, cwd, want, sizeof want);
        CHECK(ends_with(r->text, want), "%s: text ends with \"%s\", got ...\"%s\"", c->name, want,
              r->text + (strlen(r->text) > 200 ? strlen(r->text) - 200 : 0));
      }
      if (c->truncated >= 0)
        CHECK((r->details_json != NULL &&
               strstr(r->details_json, "\"truncation\"") != NULL) == (c->truncated == 1),
              "%s: truncated %d, details %s", c->name, c->truncated,
              r->details_json ? r->details_json : "(null)");
      if (c->suggested_tool) CHECK_STR(r->suggested_tool, c->suggested_tool, c->name);
    }
    conch_tool_result_free(r);
    conch_tool_free(tool);
    remove_tree(cwd);
  }
  printf("tool vectors: %zu cases\n", COUNT(TOOL_CASES));
}

static void tool_definition_vectors(void) {
  for (size_t i = 0; i < COUNT(TOOL_DEFINITION_CASES); i++) {
    const struct tool_definition_case *c = &TOOL_DEFINITION_CASES[i];
    conch_tool_options o = {0};
    o.tool_names = c->tool_names;
    o.interceptor = c->interceptor;
    o.rules_json = c->rules_json;
    o.name = c->tool_name;
    o.job_tool_name = c->job_tool_name;
    o.virtual_terminal = c->virtual_terminal;
    o.snapshot = "none";
    conch_tool *tool = conch_tool_new(&o);
    if (!CHECK(tool != NULL, "%s: conch_tool_new: %s", c->name, conch_last_error())) continue;
    char *json = conch_tool_definition(tool);
    if (CHECK(json != NULL, "%s: conch_tool_definition: %s", c->name, conch_last_error()))
      CHECK_STR(json, c->expect_json, c->name);
    conch_string_free(json);
    conch_tool_free(tool);
  }
  printf("tool definition vectors: %zu cases\n", COUNT(TOOL_DEFINITION_CASES));
}

/* A call of another thread, waiting for its turn behind a running one, when
 * the tool is freed: the running call is stopped (its shell is closed), the
 * waiting one is refused with CONCH_ERR_CLOSED and *out untouched; it runs
 * neither on the closed shell nor on a fresh one. */
struct waiting_call {
  conch_tool *tool;
  const char *args;
  int rc;
  conch_tool_result *out;
  char error[128]; /* conch_last_error() of the calling thread */
  atomic_bool started; /* the call's output arrived */
};

static void saw_output(void *user, const char *utf8, size_t len) {
  (void)utf8;
  (void)len;
  atomic_store(&((struct waiting_call *)user)->started, true);
}

static void *run_waiting_call(void *arg) {
  struct waiting_call *c = arg;
  c->out = NULL;
  c->rc = conch_tool_execute(c->tool, c->args, NULL, false, saw_output, c, &c->out);
  snprintf(c->error, sizeof c->error, "%s", conch_last_error());
  return NULL;
}

static void test_free_refuses_a_waiting_call(void) {
  conch_tool_options o = {0};
  o.session_key = "ctest-tool-free-waiting";
  o.snapshot = "none";
  o.cwd = "/";
  o.update_interval_ms = 10;
  conch_tool *tool = conch_tool_new(&o);
  if (!CHECK(tool != NULL, "conch_tool_new")) return;
  struct waiting_call first = {.tool = tool, .args = "{\"command\": \"echo started; /bin/sleep 60\"}"};
  struct waiting_call second = {.tool = tool, .args = "{\"command\": \"echo second\"}"};
  atomic_init(&first.started, false);
  atomic_init(&second.started, false);
  pthread_t t1, t2;
  pthread_create(&t1, NULL, run_waiting_call, &first);
  for (int i = 0; i < 3000 && !atomic_load(&first.started); i++) usleep(10 * 1000);
  CHECK(atomic_load(&first.started), "the first call runs");
  pthread_create(&t2, NULL, run_waiting_call, &second);
  usleep(500 * 1000); /* the second call takes its place behind the first */
  conch_tool_free(tool);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  CHECK(first.rc == CONCH_ERR_TOOL && first.out != NULL, "the running call is stopped: %d", first.rc);
  conch_tool_result_free(first.out);
  CHECK_RC(second.rc, CONCH_ERR_CLOSED, "the waiting call is refused");
  CHECK(second.out == NULL, "*out untouched on CONCH_ERR_CLOSED");
  CHECK_STR(second.error, "bash tool is closed", "its message");
  CHECK(!atomic_load(&second.started), "it printed nothing");
  conch_tool_result_free(second.out);
}

int main(void) {
  if (mkdtemp(artifacts) == NULL) return 2;
  conch_tool *tool = new_tool(false);
  if (tool) {
    test_outcomes(tool);
    test_truncation_and_artifact(tool);
    test_updates_and_abort(tool);
    test_errors(tool);
    conch_tool_free(tool);
  }
  test_free_refuses_a_waiting_call();
  test_blocked();
  tool_vectors();
  tool_definition_vectors();
  CHECK_RC(conch_close_sessions(NULL), CONCH_OK, "conch_close_sessions");
  remove_tree(artifacts);
  return check_finish();
}
