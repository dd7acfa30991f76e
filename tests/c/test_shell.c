/* The shell through the C API: runs, streamed chunks, state, limits,
 * timeouts, abort and free from another thread, cancel tokens, artifacts,
 * background jobs, reset, the one-shot runner and its errors. Real bash,
 * real processes. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "chunks.h"
#include "scratch.h"

#ifndef CONCH_EXPECTED_VERSION
#error "compile with -DCONCH_EXPECTED_VERSION=\"<version of conch-ffi>\""
#endif

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs `command` with default run options; returns the result or NULL. */
static conch_bash_result *run(conch_shell *sh, const char *command) {
  conch_run_options o = {0};
  o.command = command;
  conch_bash_result *r = NULL;
  int rc = conch_shell_run(sh, &o, NULL, NULL, &r);
  CHECK_RC(rc, CONCH_OK, command);
  return r;
}

static conch_shell *new_shell(void) {
  conch_shell_options o = {0};
  o.snapshot = "none";
  conch_shell *sh = conch_shell_new(&o);
  CHECK(sh != NULL, "conch_shell_new");
  return sh;
}

static void test_version(void) {
  CHECK_STR(conch_version(), CONCH_EXPECTED_VERSION, "conch_version");
  CHECK_STR(conch_last_error(), "", "no error at start");
}

static void test_run_and_result(void) {
  conch_shell *sh = conch_shell_new(NULL); /* all defaults, snapshot "auto" */
  if (!CHECK(sh != NULL, "conch_shell_new(NULL)")) return;
  conch_bash_result *r = run(sh, "printf 'a\\nb\\n'; echo err >&2");
  if (r) {
    CHECK_STR(r->output, "a\nb\nerr\n", "stdout and stderr share one stream");
    CHECK(r->has_exit_code && r->exit_code == 0, "exit 0, got %d", r->exit_code);
    CHECK(!r->cancelled && !r->timed_out && !r->truncated && !r->session_reset, "flags clear");
    CHECK(r->total_lines == 3 && r->total_bytes == 8, "totals 3/8, got %llu/%llu",
          (unsigned long long)r->total_lines, (unsigned long long)r->total_bytes);
    CHECK(r->output_lines == 3 && r->output_bytes == 8, "output counts 3/8");
    CHECK(r->artifact_id == NULL, "no artifact without a store");
    CHECK(r->working_dir != NULL, "working_dir set");
  }
  conch_bash_result_free(r);

  r = run(sh, "(exit 7)");
  if (r) CHECK(r->has_exit_code && r->exit_code == 7, "exit 7, got %d", r->exit_code);
  conch_bash_result_free(r);

  r = run(sh, "echo 'oops");
  if (r) CHECK(r->has_exit_code && r->exit_code == 2, "syntax error is status 2, got %d", r->exit_code);
  conch_bash_result_free(r);
  r = run(sh, "echo alive");
  if (r) CHECK_STR(r->output, "alive\n", "the session survives a syntax error");
  conch_bash_result_free(r);
  conch_shell_free(sh);
}

static void test_streaming(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  struct chunks c;
  chunks_init(&c, NULL);
  conch_run_options o = {0};
  o.command = "for i in 1 2 3; do echo line$i; sleep 0.05; done";
  conch_bash_result *r = NULL;
  int rc = conch_shell_run(sh, &o, on_chunk, &c, &r);
  if (CHECK_RC(rc, CONCH_OK, "streamed run")) {
    CHECK_STR(c.text, "line1\nline2\nline3\n", "chunks carry the whole output in order");
    CHECK_STR(r->output, c.text, "chunks equal the result output");
    CHECK(c.calls >= 1, "the callback ran (%d calls)", c.calls);
    CHECK(!c.wrong_thread, "callbacks run on the calling thread");
    CHECK(!c.not_terminated, "chunks are NUL-terminated");
  }
  conch_bash_result_free(r);
  chunks_destroy(&c);
  conch_shell_free(sh);
}

static void test_state_env_cwd(void) {
  conch_shell_options so = {0};
  const char *session_env[] = {"SESSION_VAR=from-session", NULL};
  so.snapshot = "none";
  so.cwd = "/";
  so.env = session_env;
  conch_shell *sh = conch_shell_new(&so);
  if (!CHECK(sh != NULL, "shell with cwd and env")) return;

  conch_bash_result *r = run(sh, "pwd; echo $SESSION_VAR");
  if (r) CHECK_STR(r->output, "/\nfrom-session\n", "session cwd and env");
  conch_bash_result_free(r);

  r = run(sh, "cd /tmp && export FOO=bar && f() { echo fn-$1; }");
  conch_bash_result_free(r);
  r = run(sh, "echo $FOO; pwd; f x");
  if (r) {
    CHECK_STR(r->output, "bar\n/tmp\nfn-x\n", "state persists across runs");
    CHECK_STR(r->working_dir, "/tmp", "working_dir follows cd");
  }
  conch_bash_result_free(r);

  const char *run_env[] = {"ONLY_THIS_RUN=1", NULL};
  conch_run_options o = {0};
  o.command = "echo ${ONLY_THIS_RUN-unset}; pwd";
  o.env = run_env;
  o.cwd = "/";
  r = NULL;
  int rc = conch_shell_run(sh, &o, NULL, NULL, &r);
  if (CHECK_RC(rc, CONCH_OK, "per-run env and cwd")) CHECK_STR(r->output, "1\n/\n", "per-run env and cwd apply");
  conch_bash_result_free(r);
  r = run(sh, "echo ${ONLY_THIS_RUN-unset}; pwd");
  if (r) CHECK_STR(r->output, "unset\n/tmp\n", "per-run env and cwd are restored");
  conch_bash_result_free(r);

  /* Bad per-run input is an error with the core's text, not a crash. */
  o.command = "true";
  o.env = NULL;
  o.cwd = "/nonexistent-conch-dir";
  r = NULL;
  rc = conch_shell_run(sh, &o, NULL, NULL, &r);
  CHECK_RC(rc, CONCH_ERR_INVALID_ARG, "missing cwd");
  CHECK_STR(conch_last_error(), "Working directory does not exist: /nonexistent-conch-dir",
            "missing cwd message");
  CHECK(r == NULL, "out untouched on error");
  const char *bad_env[] = {"NO_EQUALS_SIGN", NULL};
  o.cwd = NULL;
  o.env = bad_env;
  rc = conch_shell_run(sh, &o, NULL, NULL, &r);
  CHECK_RC(rc, CONCH_ERR_INVALID_ARG, "env entry without =");
  CHECK(strstr(conch_last_error(), "KEY=VALUE") != NULL, "env error explains the form");
  const char *bad_name[] = {"1BAD=x", NULL};
  o.env = bad_name;
  rc = conch_shell_run(sh, &o, NULL, NULL, &r);
  CHECK_RC(rc, CONCH_ERR_INVALID_ARG, "invalid variable name");
  o.env = NULL;
  o.command = "echo \xff";
  rc = conch_shell_run(sh, &o, NULL, NULL, &r);
  CHECK_RC(rc, CONCH_ERR_INVALID_ARG, "invalid UTF-8 command");
  CHECK(strstr(conch_last_error(), "opts->command is not valid UTF-8") != NULL, "UTF-8 error names the field");
  conch_shell_free(sh);
}

static void test_exit_resets_session(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_bash_result_free(run(sh, "cd /tmp"));
  conch_bash_result *r = run(sh, "exit 5");
  if (r) {
    CHECK(r->has_exit_code && r->exit_code == 5, "exit 5 is the status, got %d", r->exit_code);
    CHECK(r->session_ended, "exit ends the session, and its own result says so");
  }
  conch_bash_result_free(r);
  r = run(sh, "pwd");
  if (r) {
    CHECK(r->session_reset && !r->session_ended, "the next run starts a fresh shell");
    CHECK_STR(r->output, "/tmp\n", "in the last known cwd");
  }
  conch_bash_result_free(r);
  conch_shell_free(sh);
}

static void test_head_tail(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_run_options o = {0};
  o.command = "seq 1 100";
  o.head_lines = 3;
  conch_bash_result *r = NULL;
  if (CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_OK, "head"))
    CHECK_STR(r->output, "1\n2\n3\n", "head_lines keeps the first lines");
  conch_bash_result_free(r);
  o.head_lines = 0;
  o.tail_lines = 2;
  r = NULL;
  if (CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_OK, "tail")) {
    CHECK_STR(r->output, "99\n100\n", "tail_lines keeps the last lines");
    CHECK(r->total_lines == 100, "totals count the whole stream");
  }
  conch_bash_result_free(r);
  conch_shell_free(sh);
}

/* A deadline a run can end by long before the sleeps of the tests (100 s)
 * would: a hang guard, never a measure of speed. */
#define LONG_BEFORE_THE_SLEEP 50.0

static void test_timeout(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_run_options o = {0};
  /* The partial output is asserted, so the deadline leaves the echo (a
   * builtin of the running bash, which valgrind does not slow) seconds. */
  o.command = "echo before; /bin/sleep 100";
  o.timeout_ms = 3000;
  conch_bash_result *r = NULL;
  double t0 = now_s();
  int rc = conch_shell_run(sh, &o, NULL, NULL, &r);
  double took = now_s() - t0;
  if (CHECK_RC(rc, CONCH_OK, "timed-out run is a result")) {
    CHECK(r->timed_out && r->cancelled && !r->has_exit_code, "timed_out, cancelled, no exit code");
    CHECK(strncmp(r->output, "[Command timed out", 18) == 0, "notice first, got \"%s\"", r->output);
    CHECK(strstr(r->output, "before\n") != NULL, "partial output kept");
  }
  CHECK(took < LONG_BEFORE_THE_SLEEP, "the timeout ends the run, not the sleep (took %.2f s)", took);
  conch_bash_result_free(r);
  r = run(sh, "echo still-here");
  if (r) CHECK_STR(r->output, "still-here\n", "the session lives on after a timeout");
  conch_bash_result_free(r);
  conch_shell_free(sh);
}

struct abort_job {
  conch_shell *sh;
  struct chunks *chunks;
  bool started;
  int rc;
  double at;
};

static void *abort_when_started(void *arg) {
  struct abort_job *job = arg;
  job->started = wait_started(job->chunks);
  job->at = now_s();
  job->rc = conch_shell_abort(job->sh);
  return NULL;
}

static void test_abort_from_another_thread(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  struct chunks c;
  chunks_init(&c, NULL);
  struct abort_job job = {sh, &c, false, -100, 0};
  pthread_t t;
  pthread_create(&t, NULL, abort_when_started, &job);
  conch_run_options o = {0};
  o.command = "echo started; /bin/sleep 100";
  o.timeout_ms = 20000; /* a safety net: the abort must come long before */
  conch_bash_result *r = NULL;
  int rc = conch_shell_run(sh, &o, on_chunk, &c, &r);
  double returned = now_s();
  pthread_join(t, NULL);
  CHECK(job.started, "the command started");
  CHECK_RC(job.rc, CONCH_OK, "conch_shell_abort");
  if (CHECK_RC(rc, CONCH_OK, "aborted run is a result")) {
    CHECK(r->cancelled && !r->timed_out && !r->has_exit_code, "cancelled, not timed out");
    CHECK(strncmp(r->output, "[Command cancelled]\n", 20) == 0, "cancel notice, got \"%s\"", r->output);
  }
  /* Not asserted (speed is for bench/): had the abort not stopped the run,
   * the 20 s deadline would have, and the result would say timed_out. */
  printf("abort latency: %.0f ms\n", (returned - job.at) * 1000);
  conch_bash_result_free(r);
  r = run(sh, "echo after-abort");
  if (r) CHECK_STR(r->output, "after-abort\n", "the session lives on after an abort");
  conch_bash_result_free(r);
  chunks_destroy(&c);
  conch_shell_free(sh);
}

/* A callback may abort the run it is called from. */
struct self_abort {
  conch_shell *sh;
  int calls, rc;
};

static void abort_on_first_chunk(void *user, const char *utf8, size_t len) {
  (void)utf8;
  (void)len;
  struct self_abort *a = user;
  if (a->calls++ == 0) a->rc = conch_shell_abort(a->sh);
}

static void test_abort_from_callback(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  struct self_abort a = {sh, 0, -100};
  conch_run_options o = {0};
  o.command = "echo started; /bin/sleep 100";
  o.timeout_ms = 20000;
  conch_bash_result *r = NULL;
  if (CHECK_RC(conch_shell_run(sh, &o, abort_on_first_chunk, &a, &r), CONCH_OK, "self-aborted run"))
    CHECK(r->cancelled && !r->timed_out, "aborted from inside the callback");
  CHECK_RC(a.rc, CONCH_OK, "conch_shell_abort inside a callback");
  conch_bash_result_free(r);
  conch_shell_free(sh);
}

/* The last error belongs to the thread that failed. */
static void *other_thread_error(void *arg) {
  (void)arg;
  return (void *)(intptr_t)(conch_last_error()[0] == '\0');
}

static void test_last_error_is_per_thread(void) {
  CHECK(conch_sanitize_text(NULL) == NULL, "a failing call");
  pthread_t t;
  void *clean = NULL;
  pthread_create(&t, NULL, other_thread_error, NULL);
  pthread_join(t, &clean);
  CHECK(clean != NULL, "another thread does not see this thread's error");
  CHECK(strstr(conch_last_error(), "conch_sanitize_text") != NULL, "this thread still does");
}

struct free_job {
  conch_shell *sh;
  struct chunks *chunks;
};

static void *free_when_started(void *arg) {
  struct free_job *job = arg;
  if (!wait_started(job->chunks)) fprintf(stderr, "the command did not start; freeing anyway\n");
  conch_shell_free(job->sh);
  return NULL;
}

static void test_free_while_running(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  struct chunks c;
  chunks_init(&c, NULL);
  struct free_job job = {sh, &c};
  pthread_t t;
  pthread_create(&t, NULL, free_when_started, &job);
  conch_run_options o = {0};
  o.command = "echo started; /bin/sleep 100";
  conch_bash_result *r = NULL;
  double t0 = now_s();
  int rc = conch_shell_run(sh, &o, on_chunk, &c, &r);
  pthread_join(t, NULL);
  if (CHECK_RC(rc, CONCH_OK, "run stopped by free")) CHECK(r->cancelled, "the run was cancelled");
  CHECK(now_s() - t0 < LONG_BEFORE_THE_SLEEP, "free from another thread stops the run");
  conch_bash_result_free(r);
  chunks_destroy(&c);
}

static void test_cancel_token(void) {
  conch_cancel_token *token = conch_cancel_token_new();
  if (!CHECK(token != NULL, "conch_cancel_token_new")) return;
  bool cancelled = true;
  CHECK_RC(conch_cancel_token_is_cancelled(token, &cancelled), CONCH_OK, "is_cancelled");
  CHECK(!cancelled, "a new token is not cancelled");
  CHECK_RC(conch_cancel_token_cancel(token), CONCH_OK, "cancel");
  CHECK_RC(conch_cancel_token_cancel(token), CONCH_OK, "cancel twice");
  conch_cancel_token_is_cancelled(token, &cancelled);
  CHECK(cancelled, "cancelled after cancel");

  conch_shell *sh = new_shell();
  if (sh) {
    conch_run_options o = {0};
    o.command = "/bin/sleep 100";
    o.cancel = token;
    conch_bash_result *r = NULL;
    double t0 = now_s();
    if (CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_OK, "pre-cancelled run"))
      CHECK(r->cancelled && !r->has_exit_code, "a cancelled token cancels the run");
    CHECK(now_s() - t0 < LONG_BEFORE_THE_SLEEP, "without waiting for the command");
    conch_bash_result_free(r);
    conch_shell_free(sh);
  }

  conch_execute_options eo = {0};
  eo.command = "/bin/sleep 100";
  eo.cancel = token;
  conch_bash_result *r = NULL;
  if (CHECK_RC(conch_execute_shell(&eo, NULL, NULL, &r), CONCH_OK, "pre-cancelled one-shot"))
    CHECK(r->cancelled, "the token cancels a one-shot too");
  conch_bash_result_free(r);
  conch_cancel_token_free(token);
}

static void test_artifacts(void) {
  char dir[] = "/tmp/conch-ctest-art-XXXXXX";
  if (!SETUP(mkdtemp(dir) != NULL, "mkdtemp")) return;
  conch_artifact_store *store = conch_artifact_store_new(dir);
  conch_shell_options so = {0};
  so.snapshot = "none";
  so.max_bytes = 1000;
  so.artifact_store = store;
  conch_shell *sh = conch_shell_new(&so);
  if (!CHECK(sh != NULL, "shell with an artifact store")) return;
  conch_bash_result *r = run(sh, "seq 1 10000");
  if (r) {
    CHECK(r->truncated, "a large output is truncated");
    CHECK(r->total_lines == 10000, "total_lines counts everything");
    CHECK(r->output_bytes <= 1000, "output bounded by max_bytes (%llu)", (unsigned long long)r->output_bytes);
    CHECK(r->artifact_id != NULL, "the full output was spilled");
  }
  if (r && r->artifact_id) {
    char url[64], *text = NULL;
    snprintf(url, sizeof url, "artifact://%s", r->artifact_id);
    if (CHECK_RC(conch_artifact_store_resolve(store, url, &text), CONCH_OK, "resolve")) {
      CHECK(strncmp(text, "1\n2\n3\n", 6) == 0 && strstr(text, "\n10000\n") != NULL,
            "the artifact holds the whole stream");
    }
    conch_string_free(text);
    text = NULL;
    if (CHECK_RC(conch_artifact_store_read(store, r->artifact_id, 9998, -1, &text), CONCH_OK, "read"))
      CHECK_STR(text, "9999\n10000\n", "read a line range");
    conch_string_free(text);
    char *id = NULL, *path = NULL;
    if (CHECK_RC(conch_artifact_store_allocate(store, "bash", &id, &path), CONCH_OK, "allocate")) {
      CHECK(strcmp(id, r->artifact_id) != 0, "the shared store never repeats an id (%s)", id);
    }
    conch_string_free(id);
    conch_string_free(path);
    char *text2 = NULL;
    CHECK_RC(conch_artifact_store_resolve(store, "artifact://999", &text2), CONCH_ERR_NOT_FOUND, "unknown id");
    CHECK(strncmp(conch_last_error(), "Artifact 999 not found. Available: ", 35) == 0,
          "the not-found text");
  }
  conch_bash_result_free(r);
  conch_shell_free(sh);
  conch_artifact_store_free(store);
  remove_tree(dir);

  so.artifact_store = NULL;
  so.artifacts_dir = NULL;
  conch_artifact_store *other = conch_artifact_store_new("/tmp");
  so.artifacts_dir = "/tmp";
  so.artifact_store = other;
  CHECK(conch_shell_new(&so) == NULL, "artifacts_dir and artifact_store together are refused");
  CHECK(strstr(conch_last_error(), "not both") != NULL, "and the error says so");
  conch_artifact_store_free(other);
}

/* Whether `pid` runs `/bin/sleep 100` (read from /proc/<pid>/cmdline): a
 * zombie (empty cmdline), a recycled pid or a child that has not yet exec'd
 * the sleep is not it. */
static bool runs_sleep_100(pid_t pid) {
  static const char want[] = "/bin/sleep\0" "100"; /* and its final NUL */
  char path[64], buf[sizeof want + 1];
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return false;
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return n == sizeof want && memcmp(buf, want, n) == 0;
}

/* Polls until `pid` runs the sleep (`alive`) or no longer does; false if
 * that did not happen within 10 s, a hang guard. */
static bool wait_sleep_100(pid_t pid, bool alive) {
  double deadline = now_s() + 10.0;
  while (runs_sleep_100(pid) != alive) {
    if (now_s() > deadline) return false;
    usleep(10 * 1000);
  }
  return true;
}

static void test_background_jobs_and_free(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  double t0 = now_s();
  conch_bash_result *r = run(sh, "/bin/sleep 100 & echo started");
  if (r) CHECK_STR(r->output, "started\n", "a background job does not hold the call");
  CHECK(now_s() - t0 < LONG_BEFORE_THE_SLEEP, "returned without waiting for the job");
  conch_bash_result_free(r);
  size_t count = 0;
  CHECK_RC(conch_shell_background_jobs(sh, NULL, 0, &count), CONCH_OK, "count jobs");
  CHECK(count == 1, "one background job, got %zu", count);
  uint32_t pids[4] = {0};
  size_t again = 0;
  CHECK_RC(conch_shell_background_jobs(sh, pids, 4, &again), CONCH_OK, "list jobs");
  CHECK(again == count && pids[0] > 0, "the job's pid");
  /* The kill is proven by the job running first, then no longer. */
  bool present = pids[0] > 0 && wait_sleep_100((pid_t)pids[0], true);
  CHECK(present, "background job %u runs /bin/sleep 100", pids[0]);
  conch_shell_free(sh);
  if (present)
    CHECK(wait_sleep_100((pid_t)pids[0], false), "conch_shell_free killed background job %u", pids[0]);
}

/* conch_shell_reset: a fresh bash in the start directory, the last
   one's state and processes gone; the second reset takes the spare the
   first one's bash forked (the builtin loop) or starts a bash (the eval
   loop): either way `$$` is the new bash's own pid. */
static void test_reset(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_bash_result *r = run(sh, "pwd");
  char start[256] = "";
  if (r) snprintf(start, sizeof start, "%s", r->output);
  conch_bash_result_free(r);
  conch_bash_result_free(run(sh, "cd /; X=1; /bin/sleep 100 &"));
  uint32_t pids[4] = {0};
  size_t count = 0;
  CHECK_RC(conch_shell_background_jobs(sh, pids, 4, &count), CONCH_OK, "list jobs");
  bool present = count == 1 && wait_sleep_100((pid_t)pids[0], true);
  CHECK(present, "the job runs before the reset");
  for (int i = 0; i < 2; i++) {
    CHECK_RC(conch_shell_reset(sh), CONCH_OK, "reset");
    r = run(sh, "echo ${X-unset}; pwd; [[ $$ == $BASHPID ]] && echo own");
    if (r) {
      char want[300];
      snprintf(want, sizeof want, "unset\n%sown\n", start);
      CHECK_STR(r->output, want, "a fresh bash in the start directory");
      CHECK(!r->session_reset, "a reset asked for is not reported");
    }
    conch_bash_result_free(r);
    conch_bash_result_free(run(sh, "X=1"));
  }
  if (present) CHECK(wait_sleep_100((pid_t)pids[0], false), "the reset killed job %u", pids[0]);
  conch_shell_free(sh);
}

struct queued_run {
  conch_shell *sh;
  const char *command;
  int rc;
  char output[64];
};

static void *run_in_thread(void *arg) {
  struct queued_run *q = arg;
  conch_run_options o = {0};
  o.command = q->command;
  conch_bash_result *r = NULL;
  q->rc = conch_shell_run(q->sh, &o, NULL, NULL, &r);
  if (q->rc == CONCH_OK) snprintf(q->output, sizeof q->output, "%s", r->output);
  conch_bash_result_free(r);
  return NULL;
}

static void test_concurrent_runs_queue(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  struct queued_run runs[2] = {
      {sh, "echo a1; sleep 0.2; echo a2", -100, ""},
      {sh, "echo b1; sleep 0.2; echo b2", -100, ""},
  };
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, run_in_thread, &runs[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  CHECK_RC(runs[0].rc, CONCH_OK, "first concurrent run");
  CHECK_RC(runs[1].rc, CONCH_OK, "second concurrent run");
  CHECK_STR(runs[0].output, "a1\na2\n", "runs from two threads queue, never interleave");
  CHECK_STR(runs[1].output, "b1\nb2\n", "runs from two threads queue, never interleave");
  conch_shell_free(sh);
}

static void test_execute_shell(void) {
  struct chunks c;
  chunks_init(&c, NULL);
  conch_execute_options o = {0};
  o.command = "echo $0; echo one-shot; exit 4";
  o.shell = "/bin/sh";
  o.cwd = "/";
  conch_bash_result *r = NULL;
  if (CHECK_RC(conch_execute_shell(&o, on_chunk, &c, &r), CONCH_OK, "execute_shell")) {
    CHECK_STR(r->output, "/bin/sh\none-shot\n", "runs in the given shell");
    CHECK(r->has_exit_code && r->exit_code == 4, "exit 4, got %d", r->exit_code);
    CHECK_STR(c.text, r->output, "one-shot chunks");
    CHECK(!c.wrong_thread, "one-shot callbacks on the calling thread");
  }
  conch_bash_result_free(r);
  chunks_destroy(&c);

  /* Only the flags are asserted, which hold however far the command got
   * when the deadline came. */
  o.command = "/bin/sleep 100";
  o.shell = NULL;
  o.timeout_ms = 1000;
  r = NULL;
  if (CHECK_RC(conch_execute_shell(&o, NULL, NULL, &r), CONCH_OK, "one-shot timeout"))
    CHECK(r->timed_out && r->cancelled, "one-shot timed out");
  conch_bash_result_free(r);

  o.shell = "/nonexistent/bash";
  o.timeout_ms = 0;
  o.command = "true";
  r = NULL;
  /* A one-shot runs under a supervising bash: a missing shell is that
   * bash's "No such file or directory" and status 127, as in a terminal. */
  if (CHECK_RC(conch_execute_shell(&o, NULL, NULL, &r), CONCH_OK, "missing shell")) {
    CHECK(r->has_exit_code && r->exit_code == 127, "status 127, got %d", r->exit_code);
    CHECK(strstr(r->output, "/nonexistent/bash") != NULL, "the output names it");
  }
  conch_bash_result_free(r);
  o.shell = NULL;
  o.cwd = "/nonexistent-conch-dir";
  r = NULL;
  CHECK_RC(conch_execute_shell(&o, NULL, NULL, &r), CONCH_ERR_INVALID_ARG, "one-shot in a missing cwd");
  CHECK_STR(conch_last_error(), "Working directory does not exist: /nonexistent-conch-dir", "its message");
  CHECK(r == NULL, "no result on error");

  conch_shell_options so = {0};
  so.shell = "/nonexistent/bash";
  CHECK(conch_shell_new(&so) == NULL, "a shell that cannot start");
  CHECK(strstr(conch_last_error(), "/nonexistent/bash") != NULL, "the error names it");
  so.shell = NULL;
  so.snapshot = "";
  CHECK(conch_shell_new(&so) == NULL, "an empty snapshot path");
  CHECK_STR(conch_last_error(),
            "conch_shell_new: opts->snapshot must be \"auto\", \"none\" or the path of a snapshot file, "
            "got \"\"",
            "the core's message, naming the field");
  so.snapshot = "sometimes";
  so.env_policy.inherit = "some";
  CHECK(conch_shell_new(&so) == NULL, "bad env_policy.inherit");
  CHECK(strstr(conch_last_error(), "opts->env_policy.inherit must be") != NULL, "the error names the field");
}

static void test_env_policy(void) {
  setenv("CONCH_CTEST_SECRET_KEY", "hunter2", 1);
  setenv("CONCH_CTEST_PLAIN", "visible", 1);
  conch_shell_options so = {0};
  const char *exclude[] = {"*_KEY", NULL};
  so.snapshot = "none";
  so.env_policy.exclude = exclude;
  conch_shell *sh = conch_shell_new(&so);
  if (!CHECK(sh != NULL, "shell with an env policy")) return;
  conch_bash_result *r = run(sh, "echo ${CONCH_CTEST_SECRET_KEY-dropped} $CONCH_CTEST_PLAIN $PAGER");
  if (r) CHECK_STR(r->output, "dropped visible cat\n", "excluded variables never reach bash");
  conch_bash_result_free(r);
  conch_shell_free(sh);
}

/* options_json: the core's options as JSON, beside the typed fields; an
   option the header has no field for (env_policy's inherit here, head on a
   run) reaches the core through it, and one set both ways is refused. */
static void test_options_json(void) {
  setenv("CONCH_CTEST_PLAIN", "visible", 1);
  conch_shell_options so = {0};
  so.snapshot = "none";
  so.options_json = "{\"env_policy\": {\"inherit\": \"none\"}, \"env\": {\"FROM_JSON\": \"yes\"}}";
  conch_shell *sh = conch_shell_new(&so);
  if (!CHECK(sh != NULL, "shell with options_json")) return;
  conch_run_options ro = {0};
  ro.command = "echo ${CONCH_CTEST_PLAIN-none} $FROM_JSON; seq 1 5";
  ro.options_json = "{\"head\": 2}";
  conch_bash_result *r = NULL;
  if (CHECK_RC(conch_shell_run(sh, &ro, NULL, NULL, &r), CONCH_OK, "run with options_json"))
    CHECK_STR(r->output, "none yes\n1\n", "the JSON's options apply");
  conch_bash_result_free(r);
  r = NULL;
  ro.head_lines = 3;
  CHECK_RC(conch_shell_run(sh, &ro, NULL, NULL, &r), CONCH_ERR_INVALID_ARG, "head set both ways");
  CHECK(strstr(conch_last_error(), "opts->options_json sets \"head\", which opts->head_lines sets too") != NULL,
        "the error names both");
  conch_bash_result_free(r);
  conch_shell_free(sh);
  so.options_json = "{\"max_bytes\": \"x\"}";
  CHECK(conch_shell_new(&so) == NULL, "a wrong JSON type is refused");
}

int main(void) {
  test_version();
  test_run_and_result();
  test_streaming();
  test_state_env_cwd();
  test_exit_resets_session();
  test_head_tail();
  test_timeout();
  test_abort_from_another_thread();
  test_abort_from_callback();
  test_free_while_running();
  test_last_error_is_per_thread();
  test_cancel_token();
  test_artifacts();
  test_background_jobs_and_free();
  test_reset();
  test_concurrent_runs_queue();
  test_execute_shell();
  test_env_policy();
  test_options_json();
  return check_finish();
}
