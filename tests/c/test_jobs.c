/* The jobs of a shell through the C API: what a command leaves writing in
 * the background is the job's output, never a later run's; conch_shell_poll
 * waits (for the end, for `until`), bounds (`max_bytes`), re-reads
 * (`cursor`), is cancelled, never holds up a run, and returns when the shell
 * is freed; conch_shell_jobs lists them; bad input is refused. Replays
 * tests/vectors/jobs.json (vectors_jobs.h, from tests/c/gen_vectors.py).
 * NULL arguments are in test_null.c. Real bash, real processes. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "jobs.h"
#include "scratch.h"

#include "cases.h"
#include "vectors_jobs.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t epoch_ms(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

/* The id of the newest job the shell lists (0: none). */
static uint32_t last_job(conch_shell *sh) {
  conch_job_info *jobs = NULL;
  size_t n = 0;
  if (!CHECK_RC(conch_shell_jobs(sh, &jobs, &n), CONCH_OK, "conch_shell_jobs")) return 0;
  uint32_t id = n > 0 ? jobs[n - 1].job : 0;
  conch_job_info_free(jobs, n);
  return id;
}

/* Runs `command`, a GATED one (it prints nothing), then RELEASE; returns
 * its job: all that the job writes is the job's. */
static uint32_t gated_job(conch_shell *sh, const char *command) {
  run_expect(sh, command, "");
  run_expect(sh, RELEASE, "");
  return last_job(sh);
}

static void check_u64(const char *what, const char *field, int64_t expect, uint64_t got) {
  if (expect < 0) return;
  CHECK(got == (uint64_t)expect, "%s: %s expected %lld, got %llu", what, field, (long long)expect,
        (unsigned long long)got);
}

static void vector_poll(conch_shell *sh, uint32_t own, const struct job_poll_case *c) {
  conch_poll_options o = {0};
  o.wait_ms = c->wait_ms;
  o.until = c->until;
  o.max_bytes = c->max_bytes;
  o.has_cursor = c->cursor >= 0;
  o.cursor = c->cursor >= 0 ? (uint64_t)c->cursor : 0;
  uint32_t job = c->job >= 0 ? (uint32_t)c->job : own;
  conch_job_poll *p = NULL;
  int rc = conch_shell_poll(sh, job, &o, &p);
  if (c->error != NULL) {
    /* An unknown job is a failed lookup; a bad option a bad argument. */
    int want = strncmp(c->error, "no job", 6) == 0 ? CONCH_ERR_NOT_FOUND : CONCH_ERR_INVALID_ARG;
    CHECK_RC(rc, want, c->what);
    CHECK(strstr(conch_last_error(), c->error) != NULL, "%s: the error says \"%s\": \"%s\"",
          c->what, c->error, conch_last_error());
    CHECK(p == NULL, "%s: out untouched on error", c->what);
    return;
  }
  if (!CHECK_RC(rc, CONCH_OK, c->what)) return;
  if (c->output) CHECK_STR(p->output, c->output, c->what);
  if (c->status) CHECK_STR(p->status, c->status, c->what);
  if (c->exit == EXIT_NONE) CHECK(!p->has_exit_code, "%s: no exit code", c->what);
  if (c->exit == EXIT_IS)
    CHECK(p->has_exit_code && p->exit_code == c->exit_code, "%s: exit code %d", c->what, c->exit_code);
  check_u64(c->what, "cursor", c->cursor_at, p->cursor);
  check_u64(c->what, "next_cursor", c->next_cursor, p->next_cursor);
  check_u64(c->what, "total_bytes", c->total_bytes, p->total_bytes);
  check_u64(c->what, "omitted_bytes", c->omitted_bytes, p->omitted_bytes);
  CHECK(p->job == job, "%s: the poll names its job", c->what);
  conch_job_poll_free(p);
}

static void vectors(void) {
  for (size_t i = 0; i < COUNT(JOBS_CASES); i++) {
    const struct jobs_case *c = &JOBS_CASES[i];
    conch_shell *sh = new_shell();
    if (!sh) continue;
    for (const struct job_run *r = c->runs; r->command; r++) run_expect(sh, r->command, r->output);
    uint32_t own = last_job(sh);
    for (const struct job_poll_case *p = c->polls; p->what; p++) vector_poll(sh, own, p);
    if (c->check_jobs) {
      conch_job_info *jobs = NULL;
      size_t n = 0, want = 0;
      while (c->jobs[want].command) want++;
      if (CHECK_RC(conch_shell_jobs(sh, &jobs, &n), CONCH_OK, c->name)) {
        CHECK(n == want, "%s: %zu jobs listed, expected %zu", c->name, n, want);
        CHECK((n == 0) == (jobs == NULL), "%s: the array is NULL exactly when empty", c->name);
        for (size_t k = 0; k < n && k < want; k++) {
          CHECK_STR(jobs[k].command, c->jobs[k].command, c->name);
          if (c->jobs[k].status) CHECK_STR(jobs[k].status, c->jobs[k].status, c->name);
          check_u64(c->name, "total_bytes", c->jobs[k].total_bytes, jobs[k].total_bytes);
        }
      }
      conch_job_info_free(jobs, n);
    }
    conch_shell_free(sh);
  }
  printf("vectors: %zu jobs cases\n", COUNT(JOBS_CASES));
}

/* The output a command's background work writes after it returned is the
 * job's: never part of a later run, read by a poll, listed. */
static void test_late_output_belongs_to_the_job(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  const char *command = GATED("/bin/sleep 0.3; echo late") " echo started";
  uint64_t before = epoch_ms();
  run_expect(sh, command, "started\n");
  run_expect(sh, RELEASE, "");
  sleep(1);
  run_expect(sh, "echo next", "next\n");

  conch_job_info *jobs = NULL;
  size_t n = 0;
  if (CHECK_RC(conch_shell_jobs(sh, &jobs, &n), CONCH_OK, "conch_shell_jobs") &&
      CHECK(n == 1, "one job, got %zu", n)) {
    const conch_job_info *j = &jobs[0];
    CHECK(j->job >= 1, "job ids start at 1 (%u)", j->job);
    CHECK_STR(j->command, command, "the job's command");
    CHECK_STR(j->status, "exited", "the job ended by itself");
    CHECK(!j->has_exit_code, "no exit code for work bash does not wait for");
    CHECK(j->total_bytes == 5, "5 bytes written, got %llu", (unsigned long long)j->total_bytes);
    CHECK(j->started_ms + 1000 >= before && j->started_ms <= epoch_ms(),
          "started_ms is when the command started (%llu, run at %llu)",
          (unsigned long long)j->started_ms, (unsigned long long)before);
    CHECK(j->elapsed_ms >= 250, "it lasted the sleep (%llu ms)", (unsigned long long)j->elapsed_ms);
    CHECK(j->artifact_id == NULL, "no artifact for 5 bytes");
  }
  uint32_t job = n > 0 ? jobs[0].job : 0;
  conch_job_info_free(jobs, n);

  conch_job_poll *p = poll_ok(sh, job, NULL, "poll with NULL options");
  if (p) {
    CHECK_STR(p->output, "late\n", "the late output is the job's");
    CHECK_STR(p->status, "exited", "poll status");
    CHECK(!p->has_exit_code, "no exit code");
    CHECK(p->cursor == 0 && p->next_cursor == 5 && p->omitted_bytes == 0 && p->total_bytes == 5,
          "cursor 0 -> 5, nothing omitted (%llu -> %llu, %llu)", (unsigned long long)p->cursor,
          (unsigned long long)p->next_cursor, (unsigned long long)p->omitted_bytes);
    CHECK(p->artifact_id == NULL, "no artifact");
    CHECK(p->elapsed_ms >= 250, "elapsed %llu ms", (unsigned long long)p->elapsed_ms);
  }
  conch_job_poll_free(p);
  /* The next poll reads from where that one stopped. */
  conch_poll_options o = {0};
  p = poll_ok(sh, job, &o, "second poll");
  if (p) CHECK(str_eq(p->output, "") && p->cursor == 5, "nothing new, from 5");
  conch_job_poll_free(p);
  conch_shell_free(sh);
}

/* `until` ends the wait as soon as the output matches, while the job runs;
 * without it, the wait bounds the call. */
static void test_until_and_wait(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  uint32_t job = gated_job(sh, GATED("echo one; /bin/sleep 0.3; echo two; /bin/sleep 30"));
  conch_poll_options o = {0};
  o.wait_ms = LONG_WAIT_MS;
  /* `(?m)`: the regex crate's multi-line flag (`$` at a line's end). */
  o.until = "(?m)^two$";
  double t0 = now_s();
  conch_job_poll *p = poll_ok(sh, job, &o, "poll until two");
  double took = now_s() - t0;
  CHECK(took < LONG_BEFORE_THE_SLEEP, "until ended the wait (%.2f s)", took);
  if (p) {
    CHECK_STR(p->output, "one\ntwo\n", "what arrived until the match, across two pieces");
    CHECK_STR(p->status, "running", "the job goes on");
  }
  conch_job_poll_free(p);

  /* Nothing more comes: a 300 ms wait is waited out, and returns nothing. */
  conch_poll_options w = {0};
  w.wait_ms = 300;
  t0 = now_s();
  p = poll_ok(sh, job, &w, "poll with a wait");
  took = now_s() - t0;
  CHECK(took >= 0.25 && took < LONG_BEFORE_THE_SLEEP, "the wait bounds the call (%.2f s)", took);
  if (p) CHECK(str_eq(p->output, "") && str_eq(p->status, "running"), "nothing new, still running");
  conch_job_poll_free(p);
  conch_shell_free(sh);
}

/* max_bytes keeps the newest output; a cursor (0 included) re-reads. */
static void test_max_bytes_and_cursor(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  uint32_t job = gated_job(sh, GATED("printf abcdefghij"));
  conch_poll_options o = {0};
  o.wait_ms = LONG_WAIT_MS;
  o.max_bytes = 4;
  conch_job_poll *p = poll_ok(sh, job, &o, "poll max_bytes 4");
  if (p) {
    CHECK_STR(p->output, "ghij", "the newest 4 bytes");
    CHECK(p->cursor == 6 && p->next_cursor == 10 && p->omitted_bytes == 6 && p->total_bytes == 10,
          "6 bytes omitted, cursor 6 -> 10 (%llu -> %llu, %llu omitted)",
          (unsigned long long)p->cursor, (unsigned long long)p->next_cursor,
          (unsigned long long)p->omitted_bytes);
    CHECK_STR(p->status, "exited", "the job ended");
  }
  conch_job_poll_free(p);

  conch_poll_options c = {0};
  c.has_cursor = true; /* cursor 0: from the start, not from where the last poll stopped */
  p = poll_ok(sh, job, &c, "poll at cursor 0");
  if (p) {
    CHECK_STR(p->output, "abcdefghij", "everything again");
    CHECK(p->cursor == 0 && p->next_cursor == 10 && p->omitted_bytes == 0, "cursor 0 -> 10");
  }
  conch_job_poll_free(p);
  c.cursor = 2;
  c.max_bytes = SIZE_MAX; /* a huge bound is "all" */
  p = poll_ok(sh, job, &c, "poll at cursor 2");
  if (p) CHECK(str_eq(p->output, "cdefghij") && p->cursor == 2, "from offset 2");
  conch_job_poll_free(p);
  c.cursor = UINT64_MAX;
  p = poll_ok(sh, job, &c, "poll past the end");
  if (p) CHECK(str_eq(p->output, "") && p->cursor == 10 && p->next_cursor == 10, "past the end reads the end");
  conch_job_poll_free(p);
  conch_shell_free(sh);
}

/* A flood past the shell's max_bytes is bounded, and spilled whole to the
 * shell's artifact store. */
static void test_flood_spills_to_an_artifact(void) {
  char dir[] = "/tmp/conch-ctest-jobs-XXXXXX";
  if (!SETUP(mkdtemp(dir) != NULL, "mkdtemp")) return;
  conch_artifact_store *store = conch_artifact_store_new(dir);
  conch_shell_options so = {0};
  so.snapshot = "none";
  so.max_bytes = 1000;
  so.artifact_store = store;
  conch_shell *sh = conch_shell_new(&so);
  if (CHECK(sh != NULL, "shell with an artifact store")) {
    uint32_t job = gated_job(sh, GATED("seq 1 2000"));
    conch_poll_options o = {0};
    o.wait_ms = LONG_WAIT_MS;
    conch_job_poll *p = poll_ok(sh, job, &o, "poll a flood");
    if (p) {
      size_t len = strlen(p->output);
      CHECK(p->total_bytes == 8893, "seq 1 2000 is 8893 bytes, got %llu", (unsigned long long)p->total_bytes);
      CHECK(len <= 1001 && len > 0, "output bounded by max_bytes (%zu)", len);
      CHECK(p->omitted_bytes == p->cursor && p->next_cursor == 8893, "the rest omitted");
      CHECK(len >= 5 && strcmp(p->output + len - 5, "2000\n") == 0, "the newest output kept");
      CHECK(p->artifact_id != NULL, "spilled to an artifact");
    }
    if (p && p->artifact_id) {
      char url[64], *text = NULL;
      snprintf(url, sizeof url, "artifact://%s", p->artifact_id);
      if (CHECK_RC(conch_artifact_store_resolve(store, url, &text), CONCH_OK, "resolve"))
        CHECK(strlen(text) == 8893 && strncmp(text, "1\n2\n3\n", 6) == 0, "the artifact holds it all");
      conch_string_free(text);
      conch_job_info *jobs = NULL;
      size_t n = 0;
      if (CHECK_RC(conch_shell_jobs(sh, &jobs, &n), CONCH_OK, "jobs") && CHECK(n == 1, "one job"))
        CHECK_STR(jobs[0].artifact_id, p->artifact_id, "the listing names the artifact");
      conch_job_info_free(jobs, n);
    }
    conch_job_poll_free(p);
    conch_shell_free(sh);
  }
  conch_artifact_store_free(store);
  remove_tree(dir);
}

/* Unknown jobs (CONCH_ERR_NOT_FOUND), bad options (CONCH_ERR_INVALID_ARG), with the core's words,
 * out untouched. */
static void test_errors(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_job_poll *p = NULL;
  CHECK_RC(conch_shell_poll(sh, 99, NULL, &p), CONCH_ERR_NOT_FOUND, "unknown job");
  CHECK_STR(conch_last_error(), "no job 99 in this session", "the unknown-job text");
  CHECK_RC(conch_shell_poll(sh, 0, NULL, &p), CONCH_ERR_NOT_FOUND, "job 0");
  CHECK_RC(conch_shell_poll(sh, UINT32_MAX, NULL, &p), CONCH_ERR_NOT_FOUND, "job UINT32_MAX");

  run_expect(sh, "/bin/sleep 30 &", "");
  uint32_t job = last_job(sh);
  conch_poll_options o = {0};
  o.until = "(";
  CHECK_RC(conch_shell_poll(sh, job, &o, &p), CONCH_ERR_INVALID_ARG, "bad until");
  static const char bad_until[] = "conch_shell_poll: opts->until must be a valid regular expression";
  CHECK(strncmp(conch_last_error(), bad_until, strlen(bad_until)) == 0,
        "the error names the function and the field: \"%s\"", conch_last_error());
  o.until = "\xff";
  CHECK_RC(conch_shell_poll(sh, job, &o, &p), CONCH_ERR_INVALID_ARG, "until not UTF-8");
  CHECK(strstr(conch_last_error(), "opts->until is not valid UTF-8") != NULL, "names it");
  o.until = NULL;
  o.wait_ms = UINT64_MAX;
  CHECK_RC(conch_shell_poll(sh, job, &o, &p), CONCH_ERR_INVALID_ARG, "wait_ms UINT64_MAX");
  CHECK(strstr(conch_last_error(), "opts->wait_ms must be a number >= 0 of milliseconds up to 2147483647") != NULL,
        "the core's bound, naming the field: \"%s\"", conch_last_error());
  o.wait_ms = 2147483648ULL;
  CHECK_RC(conch_shell_poll(sh, job, &o, &p), CONCH_ERR_INVALID_ARG, "wait_ms past the bound");
  CHECK(p == NULL, "out untouched on error");
  o.wait_ms = 0;
  p = poll_ok(sh, job, &o, "the same job with good options");
  if (p) CHECK(str_eq(p->status, "running") && str_eq(p->output, ""), "running, silent");
  conch_job_poll_free(p);
  conch_shell_free(sh);
}

struct poller {
  conch_shell *sh;
  uint32_t job;
  conch_poll_options opts;
  pthread_mutex_t mu;
  bool entering;
  int rc;
  char status[32];
  double took;
};

static void *poll_in_thread(void *arg) {
  struct poller *w = arg;
  pthread_mutex_lock(&w->mu);
  w->entering = true;
  pthread_mutex_unlock(&w->mu);
  conch_job_poll *p = NULL;
  double t0 = now_s();
  w->rc = conch_shell_poll(w->sh, w->job, &w->opts, &p);
  w->took = now_s() - t0;
  if (p) snprintf(w->status, sizeof w->status, "%s", p->status);
  conch_job_poll_free(p);
  return NULL;
}

/* A waiting poll holds up no run; its cancel token ends the wait, not the
 * job. */
static void test_a_waiting_poll_holds_up_no_run(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  run_expect(sh, "/bin/sleep 30 &", "");
  conch_cancel_token *token = conch_cancel_token_new();
  struct poller w = {0};
  w.sh = sh;
  w.job = last_job(sh);
  w.opts.wait_ms = LONG_WAIT_MS;
  w.opts.cancel = token;
  pthread_mutex_init(&w.mu, NULL);
  pthread_t t;
  pthread_create(&t, NULL, poll_in_thread, &w);
  wait_entering(&w.mu, &w.entering);
  double t0 = now_s();
  run_expect(sh, "echo next", "next\n");
  CHECK(now_s() - t0 < LONG_BEFORE_THE_SLEEP, "the run did not wait for the poll");
  conch_job_info *jobs = NULL;
  size_t n = 0;
  if (CHECK_RC(conch_shell_jobs(sh, &jobs, &n), CONCH_OK, "list while a poll waits"))
    CHECK(n == 1 && str_eq(jobs[0].status, "running"), "the job runs");
  conch_job_info_free(jobs, n);
  CHECK_RC(conch_cancel_token_cancel(token), CONCH_OK, "cancel the poll");
  pthread_join(t, NULL);
  CHECK_RC(w.rc, CONCH_OK, "a cancelled poll returns what it read");
  CHECK_STR(w.status, "running", "the cancel ended the wait, not the job");
  CHECK(w.took < LONG_BEFORE_THE_SLEEP, "the cancel ended the wait (%.2f s)", w.took);
  pthread_mutex_destroy(&w.mu);
  conch_cancel_token_free(token);
  conch_shell_free(sh);
}

/* Freeing the shell while a poll waits on another thread kills the job, so
 * the poll returns (or, had the free come first, finds the shell closed). */
static void test_free_while_a_poll_waits(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  run_expect(sh, "/bin/sleep 100 & echo started", "started\n");
  struct poller w = {0};
  w.sh = sh;
  w.job = last_job(sh);
  w.opts.wait_ms = LONG_WAIT_MS;
  pthread_mutex_init(&w.mu, NULL);
  pthread_t t;
  pthread_create(&t, NULL, poll_in_thread, &w);
  wait_entering(&w.mu, &w.entering);
  conch_shell_free(sh);
  pthread_join(t, NULL);
  CHECK(w.rc == CONCH_OK || w.rc == CONCH_ERR_CLOSED, "the poll returns (status %d)", w.rc);
  if (w.rc == CONCH_OK) CHECK_STR(w.status, "killed", "the session killed the job");
  CHECK(w.took < LONG_BEFORE_THE_SLEEP, "the free ended the wait (%.2f s)", w.took);
  pthread_mutex_destroy(&w.mu);
}

int main(void) {
  vectors();
  test_late_output_belongs_to_the_job();
  test_until_and_wait();
  test_max_bytes_and_cursor();
  test_flood_spills_to_an_artifact();
  test_errors();
  test_a_waiting_poll_holds_up_no_run();
  test_free_while_a_poll_waits();
  return check_finish();
}
