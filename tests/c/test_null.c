/* Every function of conch.h called with NULL (and invalid UTF-8) where a
 * pointer or string goes: each returns an error code or NULL with a message
 * naming the function and the argument, never crashes; every _free accepts
 * NULL. scripts/test-c.sh checks that this file calls every function the
 * header declares. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

#define BAD_UTF8 "\xff\xfe"

/* The call failed with CONCH_ERR_INVALID_ARG and a message naming `fn` and
 * `arg`. */
static void expect_misuse(int rc, const char *fn, const char *arg) {
  const char *e = conch_last_error();
  CHECK(rc == CONCH_ERR_INVALID_ARG, "%s(%s): expected CONCH_ERR_INVALID_ARG, got %d", fn, arg, rc);
  CHECK(strstr(e, fn) != NULL && strstr(e, arg) != NULL, "%s(%s): message \"%s\" names both", fn,
        arg, e);
}

/* A pointer-returning call failed: NULL, with the same message rules. */
static void expect_null(void *p, const char *fn, const char *arg) {
  expect_misuse(p == NULL ? CONCH_ERR_INVALID_ARG : CONCH_OK, fn, arg);
}

static void strings(void) {
  CHECK(conch_version() != NULL && conch_version()[0] != '\0', "conch_version");
  CHECK(conch_last_error() != NULL, "conch_last_error is never NULL");
  conch_string_free(NULL);

  expect_null(conch_sanitize_text(NULL), "conch_sanitize_text", "text");
  expect_null(conch_sanitize_text(BAD_UTF8), "conch_sanitize_text", "not valid UTF-8");
  expect_null(conch_sanitize_bytes(NULL, 3), "conch_sanitize_bytes", "data");
  char *empty = conch_sanitize_bytes(NULL, 0);
  CHECK_STR(empty, "", "conch_sanitize_bytes(NULL, 0) is the empty text");
  conch_string_free(empty);
  CHECK_STR(conch_last_error(), "", "a success clears the last error");
}

static void command_helpers(void) {
  int64_t head, tail;
  expect_null(conch_normalize_bash_command(NULL, &head, &tail), "conch_normalize_bash_command", "cmd");
  expect_null(conch_normalize_bash_command("ls", NULL, &tail), "conch_normalize_bash_command", "head");
  expect_null(conch_normalize_bash_command("ls", &head, NULL), "conch_normalize_bash_command", "tail");
  expect_null(conch_normalize_bash_command(BAD_UTF8, &head, &tail), "conch_normalize_bash_command",
              "cmd is not valid UTF-8");
  expect_null(conch_apply_head_tail(NULL, 1, 1), "conch_apply_head_tail", "text");

  const char *tools[] = {"read", NULL};
  const char *bad_tools[] = {"read", BAD_UTF8, NULL};
  conch_interception *hit = NULL;
  expect_misuse(conch_check_bash_interception(NULL, tools, NULL, &hit),
                "conch_check_bash_interception", "command");
  expect_misuse(conch_check_bash_interception("cat f", NULL, NULL, &hit),
                "conch_check_bash_interception", "tool_names");
  expect_misuse(conch_check_bash_interception("cat f", tools, NULL, NULL),
                "conch_check_bash_interception", "out");
  expect_misuse(conch_check_bash_interception("cat f", bad_tools, NULL, &hit),
                "conch_check_bash_interception", "tool_names[1]");
  expect_misuse(conch_check_bash_interception("cat f", tools, "{not json", &hit),
                "conch_check_bash_interception", "rules_json");
  CHECK(hit == NULL, "out untouched on error");
  /* rules_json may be NULL: the default rules. */
  CHECK_RC(conch_check_bash_interception("cat f", tools, NULL, &hit), CONCH_OK, "default rules");
  CHECK(hit != NULL && str_eq(hit->suggested_tool, "read"), "cat f is steered to read");
  conch_interception_free(hit);
  conch_interception_free(NULL);

  char *rules = conch_default_interceptor_rules();
  CHECK(rules != NULL && rules[0] == '[', "default rules as a JSON array");
  /* The JSON round-trips as rules_json. */
  hit = NULL;
  CHECK_RC(conch_check_bash_interception("cat f", tools, rules, &hit), CONCH_OK, "custom rules");
  CHECK(hit != NULL, "the default rules given as JSON block too");
  conch_interception_free(hit);
  conch_string_free(rules);
}

static void cancel_token(void) {
  bool b;
  conch_cancel_token *token = conch_cancel_token_new();
  CHECK(token != NULL, "conch_cancel_token_new");
  expect_misuse(conch_cancel_token_cancel(NULL), "conch_cancel_token_cancel", "token");
  expect_misuse(conch_cancel_token_is_cancelled(NULL, &b), "conch_cancel_token_is_cancelled", "token");
  expect_misuse(conch_cancel_token_is_cancelled(token, NULL), "conch_cancel_token_is_cancelled", "out");
  conch_cancel_token_free(token);
  conch_cancel_token_free(NULL);
}

static void execute(void) {
  conch_bash_result *r = NULL;
  conch_execute_options o = {0};
  expect_misuse(conch_execute_shell(NULL, NULL, NULL, &r), "conch_execute_shell", "opts");
  expect_misuse(conch_execute_shell(&o, NULL, NULL, &r), "conch_execute_shell", "opts->command");
  o.command = "true";
  expect_misuse(conch_execute_shell(&o, NULL, NULL, NULL), "conch_execute_shell", "out");
  o.cwd = BAD_UTF8;
  expect_misuse(conch_execute_shell(&o, NULL, NULL, &r), "conch_execute_shell", "opts->cwd");
  o.cwd = NULL;
  const char *bad_env[] = {BAD_UTF8, NULL};
  o.env = bad_env;
  expect_misuse(conch_execute_shell(&o, NULL, NULL, &r), "conch_execute_shell", "opts->env[0]");
  o.env = NULL;
  o.env_policy.exclude = bad_env;
  expect_misuse(conch_execute_shell(&o, NULL, NULL, &r), "conch_execute_shell", "opts->env_policy.exclude[0]");
  CHECK(r == NULL, "out untouched on error");
  conch_bash_result_free(NULL);
}

static void shell(void) {
  conch_shell_options so = {0};
  so.snapshot = "none";
  so.cwd = BAD_UTF8;
  expect_null(conch_shell_new(&so), "conch_shell_new", "opts->cwd");
  so.cwd = NULL;
  so.prefix = BAD_UTF8;
  expect_null(conch_shell_new(&so), "conch_shell_new", "opts->prefix");
  so.prefix = NULL;
  so.snapshot = "";
  expect_null(conch_shell_new(&so), "conch_shell_new", "opts->snapshot");
  so.snapshot = "none";

  conch_shell *sh = conch_shell_new(&so);
  if (!CHECK(sh != NULL, "conch_shell_new")) return;
  conch_run_options o = {0};
  conch_bash_result *r = NULL;
  expect_misuse(conch_shell_run(NULL, &o, NULL, NULL, &r), "conch_shell_run", "shell");
  expect_misuse(conch_shell_run(sh, NULL, NULL, NULL, &r), "conch_shell_run", "opts");
  expect_misuse(conch_shell_run(sh, &o, NULL, NULL, &r), "conch_shell_run", "opts->command");
  o.command = "echo hi";
  expect_misuse(conch_shell_run(sh, &o, NULL, NULL, NULL), "conch_shell_run", "out");
  CHECK(r == NULL, "out untouched on error");
  /* cb may be NULL. */
  CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_OK, "run without a callback");
  conch_bash_result_free(r);

  size_t count;
  uint32_t pids[2];
  expect_misuse(conch_shell_abort(NULL), "conch_shell_abort", "shell");
  expect_misuse(conch_shell_reset(NULL), "conch_shell_reset", "shell");
  expect_misuse(conch_shell_background_jobs(NULL, pids, 2, &count), "conch_shell_background_jobs", "shell");
  expect_misuse(conch_shell_background_jobs(sh, NULL, 2, &count), "conch_shell_background_jobs", "pids");
  expect_misuse(conch_shell_background_jobs(sh, pids, 2, NULL), "conch_shell_background_jobs", "count");
  CHECK_RC(conch_shell_abort(sh), CONCH_OK, "abort with nothing running");

  conch_job_poll *p = NULL;
  conch_poll_options po = {0};
  expect_misuse(conch_shell_poll(NULL, 1, &po, &p), "conch_shell_poll", "shell");
  expect_misuse(conch_shell_poll(sh, 1, &po, NULL), "conch_shell_poll", "out");
  po.until = BAD_UTF8;
  expect_misuse(conch_shell_poll(sh, 1, &po, &p), "conch_shell_poll", "opts->until");
  CHECK(p == NULL, "out untouched on error");
  /* opts may be NULL: the defaults (here, a job the session does not have). */
  CHECK_RC(conch_shell_poll(sh, 1, NULL, &p), CONCH_ERR_NOT_FOUND, "poll of no job");
  CHECK_STR(conch_last_error(), "no job 1 in this session", "the core's words, unprefixed");
  conch_job_poll_free(NULL);
  conch_job_info *jobs = NULL;
  expect_misuse(conch_shell_jobs(NULL, &jobs, &count), "conch_shell_jobs", "shell");
  expect_misuse(conch_shell_jobs(sh, NULL, &count), "conch_shell_jobs", "out");
  expect_misuse(conch_shell_jobs(sh, &jobs, NULL), "conch_shell_jobs", "count");
  count = 7;
  CHECK_RC(conch_shell_jobs(sh, &jobs, &count), CONCH_OK, "no jobs");
  CHECK(jobs == NULL && count == 0, "no jobs: a NULL array of 0");
  conch_job_info_free(jobs, count);
  conch_job_info_free(NULL, 3);
  conch_sandbox_applied *applied = NULL;
  expect_misuse(conch_shell_sandbox_applied(NULL, &applied), "conch_shell_sandbox_applied", "shell");
  expect_misuse(conch_shell_sandbox_applied(sh, NULL), "conch_shell_sandbox_applied", "out");
  CHECK_RC(conch_shell_sandbox_applied(sh, &applied), CONCH_ERR_NOT_FOUND, "no sandbox");
  CHECK(applied == NULL, "out untouched without a sandbox");
  conch_sandbox_applied_free(NULL);
  expect_misuse(conch_shell_set_network(NULL, CONCH_NETWORK_DENY, NULL), "conch_shell_set_network",
                "shell");
  const char *const bad_pattern[] = {BAD_UTF8, NULL};
  conch_domain_policy domains = {0};
  domains.allow = bad_pattern;
  expect_misuse(conch_shell_set_network(sh, CONCH_NETWORK_DOMAINS, &domains),
                "conch_shell_set_network", "domains.allow[0]");
  conch_engine engine = CONCH_ENGINE_EVAL;
  expect_misuse(conch_shell_engine(NULL, &engine), "conch_shell_engine", "shell");
  expect_misuse(conch_shell_engine(sh, NULL), "conch_shell_engine", "out");
  CHECK(engine == CONCH_ENGINE_EVAL, "out untouched on error");

  /* Jobs started beside the session. */
  conch_job_options jo = {0};
  uint32_t job = 7;
  bool found = true;
  expect_misuse(conch_shell_start(NULL, &jo, &job), "conch_shell_start", "shell");
  expect_misuse(conch_shell_start(sh, NULL, &job), "conch_shell_start", "opts");
  expect_misuse(conch_shell_start(sh, &jo, &job), "conch_shell_start", "opts->command");
  jo.command = "true";
  expect_misuse(conch_shell_start(sh, &jo, NULL), "conch_shell_start", "job_out");
  jo.cwd = BAD_UTF8;
  expect_misuse(conch_shell_start(sh, &jo, &job), "conch_shell_start", "opts->cwd");
  jo.cwd = NULL;
  const char *bad_env[] = {BAD_UTF8, NULL};
  jo.env = bad_env;
  expect_misuse(conch_shell_start(sh, &jo, &job), "conch_shell_start", "opts->env[0]");
  jo.env = NULL;
  jo.timeout_ms = UINT64_MAX;
  expect_misuse(conch_shell_start(sh, &jo, &job), "conch_shell_start", "opts->timeout_ms");
  jo.timeout_ms = 0;
  CHECK(job == 7, "job_out untouched on error");
  expect_misuse(conch_shell_write(NULL, 1, (const uint8_t *)"x", 1), "conch_shell_write", "shell");
  expect_misuse(conch_shell_write(sh, 1, NULL, 1), "conch_shell_write", "data");
  expect_misuse(conch_shell_close_stdin(NULL, 1), "conch_shell_close_stdin", "shell");
  expect_misuse(conch_shell_write_key(NULL, 1, "enter"), "conch_shell_write_key", "shell");
  expect_misuse(conch_shell_write_key(sh, 1, NULL), "conch_shell_write_key", "key");
  expect_misuse(conch_shell_write_key(sh, 1, BAD_UTF8), "conch_shell_write_key", "key");
  expect_misuse(conch_shell_signal(NULL, 1, "TERM"), "conch_shell_signal", "shell");
  expect_misuse(conch_shell_signal(sh, 1, NULL), "conch_shell_signal", "signal");
  expect_misuse(conch_shell_kill_job(NULL, 1, &p), "conch_shell_kill_job", "shell");
  uint32_t ids[] = {1};
  expect_misuse(conch_shell_wait_any(NULL, ids, 1, 0, NULL, &job, &found), "conch_shell_wait_any", "shell");
  expect_misuse(conch_shell_wait_any(sh, NULL, 1, 0, NULL, &job, &found), "conch_shell_wait_any", "jobs");
  expect_misuse(conch_shell_wait_any(sh, ids, 1, 0, NULL, NULL, &found), "conch_shell_wait_any", "job_out");
  expect_misuse(conch_shell_wait_any(sh, ids, 1, 0, NULL, &job, NULL), "conch_shell_wait_any", "found_out");
  CHECK(job == 7 && found, "outputs untouched on error");
  /* With good pointers, a job the shell does not have is a failed lookup,
   * in the core's words; data may be NULL when len is 0, the kill's out may
   * be NULL, an empty list of jobs is waited for (0 ms) and none ends. */
  CHECK_RC(conch_shell_write(sh, 1, NULL, 0), CONCH_ERR_NOT_FOUND, "write to no job");
  CHECK_STR(conch_last_error(), "no job 1 in this session", "the core's words, unprefixed");
  CHECK_RC(conch_shell_close_stdin(sh, 1), CONCH_ERR_NOT_FOUND, "close_stdin of no job");
  CHECK_RC(conch_shell_kill_job(sh, 1, NULL), CONCH_ERR_NOT_FOUND, "kill of no job");
  CHECK_RC(conch_shell_wait_any(sh, NULL, 0, 0, NULL, &job, &found), CONCH_OK, "wait for no jobs");
  CHECK(job == 0 && !found, "none found");
  conch_shell_free(sh);
  conch_shell_free(NULL);
}

static void artifacts(void) {
  char *id = NULL, *path = NULL, *text = NULL;
  expect_null(conch_artifact_store_new(NULL), "conch_artifact_store_new", "dir");
  expect_null(conch_artifact_store_new(""), "conch_artifact_store_new", "dir");
  expect_null(conch_artifact_store_new(BAD_UTF8), "conch_artifact_store_new", "dir");
  char dir[] = "/tmp/conch-ctest-null-XXXXXX";
  if (!SETUP(mkdtemp(dir) != NULL, "mkdtemp")) return;
  conch_artifact_store *st = conch_artifact_store_new(dir);
  if (!CHECK(st != NULL, "conch_artifact_store_new")) return;
  expect_misuse(conch_artifact_store_allocate(NULL, "bash", &id, &path), "conch_artifact_store_allocate", "store");
  expect_misuse(conch_artifact_store_allocate(st, NULL, &id, &path), "conch_artifact_store_allocate", "kind");
  expect_misuse(conch_artifact_store_allocate(st, "bash", NULL, &path), "conch_artifact_store_allocate", "id_out");
  expect_misuse(conch_artifact_store_resolve(NULL, "artifact://0", &text), "conch_artifact_store_resolve", "store");
  expect_misuse(conch_artifact_store_resolve(st, NULL, &text), "conch_artifact_store_resolve", "url");
  expect_misuse(conch_artifact_store_resolve(st, "artifact://0", NULL), "conch_artifact_store_resolve", "text_out");
  expect_misuse(conch_artifact_store_read(NULL, "0", 0, -1, &text), "conch_artifact_store_read", "store");
  expect_misuse(conch_artifact_store_read(st, NULL, 0, -1, &text), "conch_artifact_store_read", "id");
  expect_misuse(conch_artifact_store_read(st, "0", 0, -1, NULL), "conch_artifact_store_read", "text_out");
  CHECK(id == NULL && path == NULL && text == NULL, "outputs untouched on error");
  /* path_out may be NULL. */
  CHECK_RC(conch_artifact_store_allocate(st, "bash", &id, NULL), CONCH_OK, "allocate without a path");
  CHECK_STR(id, "0", "the first id");
  conch_string_free(id);
  conch_artifact_store_free(st);
  conch_artifact_store_free(NULL);
  /* The id is reserved as an empty file, and nothing else is made. */
  char reserved[sizeof dir + 16];
  snprintf(reserved, sizeof reserved, "%s/0.bash.log", dir);
  CHECK(unlink(reserved) == 0, "allocating reserves the id as a file");
  CHECK(rmdir(dir) == 0, "and creates nothing else");
}

static void pty(void) {
  bool b;
  conch_pty *pty = conch_pty_new();
  if (!CHECK(pty != NULL, "conch_pty_new")) return;
  conch_pty_options o = {0};
  conch_pty_result *r = NULL;
  expect_misuse(conch_pty_start(NULL, &o, NULL, NULL, &r), "conch_pty_start", "pty");
  expect_misuse(conch_pty_start(pty, NULL, NULL, NULL, &r), "conch_pty_start", "opts");
  expect_misuse(conch_pty_start(pty, &o, NULL, NULL, &r), "conch_pty_start", "opts->command");
  o.command = "true";
  expect_misuse(conch_pty_start(pty, &o, NULL, NULL, NULL), "conch_pty_start", "out");
  o.shell = BAD_UTF8;
  expect_misuse(conch_pty_start(pty, &o, NULL, NULL, &r), "conch_pty_start", "opts->shell");
  CHECK(r == NULL, "out untouched on error");
  expect_misuse(conch_pty_write(NULL, (const uint8_t *)"x", 1), "conch_pty_write", "pty");
  expect_misuse(conch_pty_write(pty, NULL, 1), "conch_pty_write", "data");
  expect_misuse(conch_pty_write_key(NULL, "enter"), "conch_pty_write_key", "pty");
  expect_misuse(conch_pty_write_key(pty, NULL), "conch_pty_write_key", "key");
  expect_misuse(conch_pty_resize(NULL, 80, 24), "conch_pty_resize", "pty");
  expect_misuse(conch_pty_kill(NULL), "conch_pty_kill", "pty");
  expect_misuse(conch_pty_is_running(NULL, &b), "conch_pty_is_running", "pty");
  expect_misuse(conch_pty_is_running(pty, NULL), "conch_pty_is_running", "out");
  expect_null(conch_pty_screen_text(NULL), "conch_pty_screen_text", "pty");
  conch_pty_result_free(NULL);
  conch_pty_free(pty);
  conch_pty_free(NULL);
}

static void tool(void) {
  conch_tool_options o = {0};
  o.rules_json = "[";
  expect_null(conch_tool_new(&o), "conch_tool_new", "opts->rules_json");
  o.rules_json = NULL;
  o.session_key = BAD_UTF8;
  expect_null(conch_tool_new(&o), "conch_tool_new", "opts->session_key");
  o.session_key = "ctest-null";
  o.snapshot = "none";
  conch_tool *t = conch_tool_new(&o);
  if (!CHECK(t != NULL, "conch_tool_new")) return;
  conch_tool_result *r = NULL;
  expect_misuse(conch_tool_execute(NULL, "{}", NULL, false, NULL, NULL, &r), "conch_tool_execute", "tool");
  expect_misuse(conch_tool_execute(t, NULL, NULL, false, NULL, NULL, &r), "conch_tool_execute", "args_json");
  expect_misuse(conch_tool_execute(t, "{\"command\": \"true\"}", NULL, false, NULL, NULL, NULL),
                "conch_tool_execute", "out");
  CHECK(r == NULL, "out untouched on error");
  conch_tool_result_free(NULL);
  expect_null(conch_tool_definition(NULL), "conch_tool_definition", "tool");
  o.name = BAD_UTF8;
  expect_null(conch_tool_new(&o), "conch_tool_new", "opts->name");
  o.name = NULL;
  o.job_tool_name = BAD_UTF8;
  expect_null(conch_tool_new(&o), "conch_tool_new", "opts->job_tool_name");
  o.job_tool_name = NULL;
  conch_tool_free(t);
  conch_tool_free(NULL);
  expect_misuse(conch_close_sessions(BAD_UTF8), "conch_close_sessions", "session_key");
  CHECK_RC(conch_close_sessions(NULL), CONCH_OK, "conch_close_sessions(NULL) closes all");
}

static void remote(void) {
  conch_remote *remote = NULL;
  expect_misuse(conch_remote_connect(NULL, NULL, &remote), "conch_remote_connect", "target");
  expect_misuse(conch_remote_connect("ws://127.0.0.1:1", NULL, NULL), "conch_remote_connect", "out");
  expect_misuse(conch_remote_connect_command(NULL, &remote), "conch_remote_connect_command", "argv");
  const char *argv[] = {"true", NULL};
  expect_misuse(conch_remote_connect_command(argv, NULL), "conch_remote_connect_command", "out");
  conch_shell *sh = NULL;
  expect_misuse(conch_remote_shell(NULL, NULL, &sh), "conch_remote_shell", "remote");
  CHECK(remote == NULL && sh == NULL, "no output written on misuse");
  conch_remote_free(NULL);
}

int main(void) {
  strings();
  command_helpers();
  cancel_token();
  execute();
  shell();
  artifacts();
  pty();
  tool();
  remote();
  return check_finish();
}
