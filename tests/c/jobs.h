/* What the job tests share (test_jobs.c, test_started_jobs.c,
 * test_jobs_acceptance.c): the hang guards of their waits, a fresh shell,
 * a run, a start and a poll that must succeed, the wait for a thread to be
 * blocked in its call, a background command held until the next run.
 * Include after check.h. */
#ifndef CONCH_TEST_JOBS_H
#define CONCH_TEST_JOBS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* A bound far above what any wait below takes, even under valgrind: a hang
 * guard, never a measure of speed. The sleeps the jobs run (30 s, 100 s)
 * are longer still, so a call that returns before it did not wait them out. */
#define LONG_BEFORE_THE_SLEEP 20.0
/* The wait of polls that must return earlier, by `until`, a cancel or a
 * free. */
#define LONG_WAIT_MS 25000

/* A background command whose `body` (a string literal) runs once the
 * session's next run is RELEASE: it is still running when the run that
 * starts it returns, however loaded the machine (what it printed before
 * would be that run's output). It waits while the file its run made is
 * there; `$$` is the session's bash, in the subshell too. */
#define GATE "/tmp/conch-gate-$$"
#define GATED(body) ": > " GATE "; (while [ -e " GATE " ]; do /bin/sleep 0.02; done; " body ") &"
/* The run that lets a GATED command go on: it removes the file. */
#define RELEASE "rm " GATE

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline conch_shell *new_shell(void) {
  conch_shell_options o = {0};
  o.snapshot = "none";
  conch_shell *sh = conch_shell_new(&o);
  CHECK(sh != NULL, "conch_shell_new");
  return sh;
}

/* Runs `command` and checks its output is exactly `expect`. */
static inline void run_expect(conch_shell *sh, const char *command, const char *expect) {
  conch_run_options o = {0};
  o.command = command;
  conch_bash_result *r = NULL;
  if (CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_OK, command))
    CHECK_STR(r->output, expect, command);
  conch_bash_result_free(r);
}

/* Polls `job` with `o` (NULL: defaults), expecting CONCH_OK. */
static inline conch_job_poll *poll_ok(conch_shell *sh, uint32_t job,
                                      const conch_poll_options *o, const char *what) {
  conch_job_poll *p = NULL;
  if (!CHECK_RC(conch_shell_poll(sh, job, o, &p), CONCH_OK, what)) return NULL;
  CHECK(p != NULL && p->output != NULL && p->status != NULL, "%s: a poll with its strings", what);
  return p;
}

/* Starts `command` with `o` (its command set here), expecting CONCH_OK. */
static inline uint32_t start_ok(conch_shell *sh, conch_job_options *o, const char *command) {
  o->command = command;
  uint32_t job = 0;
  if (!CHECK_RC(conch_shell_start(sh, o, &job), CONCH_OK, command)) return 0;
  CHECK(job >= 1, "%s: a job id from 1 (%u)", command, job);
  return job;
}

/* Waits until a thread about to make a blocking call says so (`*entering`,
 * under `mu`), then leaves it ample time to get there and block (the call
 * takes its own reference to the shell at once). */
static inline void wait_entering(pthread_mutex_t *mu, const bool *entering) {
  for (;;) {
    pthread_mutex_lock(mu);
    bool in = *entering;
    pthread_mutex_unlock(mu);
    if (in) break;
    usleep(1000);
  }
  usleep(300 * 1000);
}

#endif
