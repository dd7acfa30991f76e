/* Replays tests/vectors/job_steps.json through the C API, every case and
 * step (vectors_job_steps.h, from tests/c/gen_vectors.py): jobs started
 * beside the session (conch_shell_start), written to on a pipe and on a
 * terminal (conch_shell_write, conch_shell_close_stdin,
 * conch_shell_write_key), signalled, killed, timed out, runs moved to the
 * background at yield_after_ms, conch_shell_wait_any, the job limit
 * (max_jobs) and misuse. An error step expects the status of its kind
 * (CONCH_ERR_NOT_FOUND for not_found…) and its outputs untouched; the
 * fields an expectation gives are compared exactly. Real bash, real
 * processes. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

#include "cases.h"
#include "vectors_job_steps.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void compare_u64(const char *what, const char *field, int64_t expect, uint64_t got) {
  if (expect < 0) return;
  CHECK(got == (uint64_t)expect, "%s: %s expected %" PRId64 ", got %" PRIu64, what, field, expect, got);
}

static void compare_exit(const char *what, const struct step_expect *e, bool has, int32_t code) {
  if (e->exit == EXIT_NONE) CHECK(!has, "%s: no exit code (got %d)", what, code);
  if (e->exit == EXIT_IS)
    CHECK(has && code == e->exit_code, "%s: exit code %d expected, got %s%d", what, e->exit_code,
          has ? "" : "none: ", code);
}

static void compare_poll(const char *what, const struct step_expect *e, const conch_job_poll *p) {
  if (e->output) CHECK_STR(p->output, e->output, what);
  if (e->status) CHECK_STR(p->status, e->status, what);
  compare_exit(what, e, p->has_exit_code, p->exit_code);
  compare_u64(what, "cursor", e->cursor, p->cursor);
  compare_u64(what, "next_cursor", e->next_cursor, p->next_cursor);
  compare_u64(what, "total_bytes", e->total_bytes, p->total_bytes);
  compare_u64(what, "omitted_bytes", e->omitted_bytes, p->omitted_bytes);
}

static void compare_info(const char *what, const struct step_expect *e, const conch_job_info *j) {
  if (e->command) CHECK_STR(j->command, e->command, what);
  if (e->status) CHECK_STR(j->status, e->status, what);
  compare_exit(what, e, j->has_exit_code, j->exit_code);
  compare_u64(what, "total_bytes", e->total_bytes, j->total_bytes);
}

static void compare_result(const char *what, const struct step_expect *e, const conch_bash_result *r) {
  if (e->output) CHECK_STR(r->output, e->output, what);
  compare_exit(what, e, r->has_exit_code, r->exit_code);
  if (e->backgrounded == -1)
    CHECK(!r->has_backgrounded, "%s: not backgrounded (got job %u)", what, r->backgrounded);
  if (e->backgrounded >= 0)
    CHECK(r->has_backgrounded && r->backgrounded == (uint32_t)e->backgrounded,
          "%s: backgrounded as job %" PRId64 ", got %s%u", what, e->backgrounded,
          r->has_backgrounded ? "" : "none: ", r->backgrounded);
}

/* Plays one step on `sh`, acting on `job`; `current` is the job the last
 * start (or backgrounded run) made. Returns the status of the call. */
static int play(conch_shell *sh, const struct job_step *s, uint32_t job, uint32_t *current) {
  const char *what = s->what;
  int rc = CONCH_OK;
  switch (s->op) {
    case STEP_RUN: {
      conch_run_options o = {0};
      o.command = s->command;
      o.yield_after_ms = s->yield_after_ms;
      conch_bash_result *r = NULL;
      rc = conch_shell_run(sh, &o, NULL, NULL, &r);
      if (rc == CONCH_OK) {
        if (r->has_backgrounded) *current = r->backgrounded;
        if (s->has_expect) compare_result(what, &s->expect, r);
      } else {
        CHECK(r == NULL, "%s: out untouched on error", what);
      }
      conch_bash_result_free(r);
      break;
    }
    case STEP_START: {
      conch_job_options o = {0};
      o.command = s->command;
      o.cwd = s->cwd;
      o.env = s->env;
      o.timeout_ms = s->timeout_ms;
      o.stdin_pipe = s->stdin_pipe;
      o.pty_cols = s->pty_cols;
      o.pty_rows = s->pty_rows;
      uint32_t id = 0;
      rc = conch_shell_start(sh, &o, &id);
      if (rc == CONCH_OK) {
        CHECK(id >= 1, "%s: a job id from 1 (%u)", what, id);
        *current = id;
      } else {
        CHECK(id == 0, "%s: job_out untouched on error", what);
      }
      break;
    }
    case STEP_POLL: {
      conch_poll_options o = {0};
      o.wait_ms = s->wait_ms;
      o.until = s->until;
      o.max_bytes = s->max_bytes;
      o.has_cursor = s->cursor >= 0;
      o.cursor = s->cursor >= 0 ? (uint64_t)s->cursor : 0;
      conch_job_poll *p = NULL;
      rc = conch_shell_poll(sh, job, &o, &p);
      if (rc == CONCH_OK) {
        CHECK(p->job == job, "%s: the poll names its job", what);
        if (s->has_expect) compare_poll(what, &s->expect, p);
      } else {
        CHECK(p == NULL, "%s: out untouched on error", what);
      }
      conch_job_poll_free(p);
      break;
    }
    case STEP_WRITE:
      rc = conch_shell_write(sh, job, (const uint8_t *)s->data, s->data_len);
      break;
    case STEP_CLOSE_STDIN:
      rc = conch_shell_close_stdin(sh, job);
      break;
    case STEP_KEY:
      rc = conch_shell_write_key(sh, job, s->key);
      break;
    case STEP_SIGNAL:
      rc = conch_shell_signal(sh, job, s->signal);
      break;
    case STEP_KILL: {
      conch_job_poll *p = NULL;
      rc = conch_shell_kill_job(sh, job, &p);
      if (rc == CONCH_OK) {
        if (s->has_expect) compare_poll(what, &s->expect, p);
      } else {
        CHECK(p == NULL, "%s: out untouched on error", what);
      }
      conch_job_poll_free(p);
      break;
    }
    case STEP_JOBS: {
      conch_job_info *jobs = NULL;
      size_t n = 0;
      rc = conch_shell_jobs(sh, &jobs, &n);
      if (rc == CONCH_OK && s->has_expect) {
        CHECK(n == s->expect_jobs_count, "%s: %zu jobs listed, expected %zu", what, n,
              s->expect_jobs_count);
        for (size_t k = 0; k < n && k < s->expect_jobs_count; k++)
          compare_info(what, &s->expect_jobs[k], &jobs[k]);
      }
      conch_job_info_free(jobs, n);
      break;
    }
    case STEP_WAIT_ANY: {
      uint32_t own[1] = {*current};
      const uint32_t *ids = s->wait_jobs ? s->wait_jobs : own;
      size_t count = s->wait_jobs ? s->wait_count : 1;
      uint32_t ended = 12345;
      bool found = true;
      rc = conch_shell_wait_any(sh, ids, count, s->timeout_ms, NULL, &ended, &found);
      if (rc == CONCH_OK) {
        CHECK(found == (ended != 0), "%s: found %d with job %u", what, found, ended);
        if (s->has_expect && s->expect_waited < 0) CHECK(!found, "%s: none ended (got %u)", what, ended);
        if (s->has_expect && s->expect_waited >= 0)
          CHECK(found && ended == (uint32_t)s->expect_waited, "%s: job %" PRId64 " ended first, got %u",
                what, s->expect_waited, ended);
      } else {
        CHECK(ended == 12345 && found, "%s: outputs untouched on error", what);
      }
      break;
    }
  }
  return rc;
}

int main(void) {
  size_t steps = 0;
  for (size_t i = 0; i < COUNT(JOB_STEPS_CASES); i++) {
    const struct job_steps_case *c = &JOB_STEPS_CASES[i];
    conch_shell_options so = {0};
    so.snapshot = "none";
    so.max_jobs = c->max_jobs;
    conch_shell *sh = conch_shell_new(&so);
    if (!CHECK(sh != NULL, "%s: conch_shell_new", c->name)) continue;
    uint32_t current = 0;
    for (const struct job_step *s = c->steps; s->what; s++, steps++) {
      uint32_t job = s->job >= 0 ? (uint32_t)s->job : current;
      int rc = play(sh, s, job, &current);
      if (s->error_kind) {
        CHECK(rc == s->status, "%s: expected %s (status %d), got %d", s->what, s->error_kind, s->status, rc);
        CHECK(conch_last_error()[0] != '\0', "%s: the error says why", s->what);
      } else {
        CHECK_RC(rc, CONCH_OK, s->what);
      }
    }
    conch_shell_free(sh);
  }
  printf("vectors: %zu job_steps cases, %zu steps\n", COUNT(JOB_STEPS_CASES), steps);
  return check_finish();
}
