/* Jobs started beside the session through the C API: conch_shell_start
 * and the calls on a started job (input, keys, signals, kill, wait_any),
 * a run's `yield_after`, the job limit and a job's own timeout, the
 * on_job_exit hook (also freeing the shell from inside it), misuse.
 * test_jobs.c has the polls and the shared vectors; NULL arguments are in
 * test_null.c. Real bash, real processes. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "jobs.h"

/* Polls `job` until it ends or `until` matches, within the hang guard. */
static conch_job_poll *poll_until(conch_shell *sh, uint32_t job, const char *until, const char *what) {
  conch_poll_options o = {0};
  o.wait_ms = LONG_WAIT_MS;
  o.until = until;
  return poll_ok(sh, job, &o, what);
}

/* A job reading a pipe answers what is written to it; its input closes;
 * then it takes no more. */
static void test_a_pipe_job_answers(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_job_options o = {0};
  o.stdin_pipe = true;
  uint32_t job = start_ok(sh, &o, "read -r n; echo \"hi $n\"; cat; echo eof");
  CHECK_RC(conch_shell_write(sh, job, (const uint8_t *)"ann\n", 4), CONCH_OK, "write ann");
  conch_job_poll *p = poll_until(sh, job, "hi ann", "poll until hi ann");
  if (p) CHECK(str_eq(p->output, "hi ann\n") && str_eq(p->status, "running"), "it answered, and reads on");
  conch_job_poll_free(p);
  CHECK_RC(conch_shell_write(sh, job, (const uint8_t *)"more\n", 5), CONCH_OK, "write more");
  CHECK_RC(conch_shell_write(sh, job, NULL, 0), CONCH_OK, "an empty write");
  CHECK_RC(conch_shell_write_key(sh, job, "enter"), CONCH_ERR_NO_INPUT, "a key to a pipe job");
  CHECK(strstr(conch_last_error(), "has no terminal") != NULL, "says why: \"%s\"", conch_last_error());
  CHECK_RC(conch_shell_close_stdin(sh, job), CONCH_OK, "close its input");
  p = poll_until(sh, job, NULL, "poll to the end");
  if (p) {
    CHECK_STR(p->output, "more\neof\n", "cat read to the end of its input");
    CHECK_STR(p->status, "exited", "it ended");
    CHECK(p->has_exit_code && p->exit_code == 0, "a started job has its exit code");
  }
  conch_job_poll_free(p);
  CHECK_RC(conch_shell_write(sh, job, (const uint8_t *)"late\n", 5), CONCH_ERR_NO_INPUT, "write after the end");
  CHECK(strstr(conch_last_error(), "has ended") != NULL, "says why: \"%s\"", conch_last_error());
  CHECK_RC(conch_shell_close_stdin(sh, job), CONCH_ERR_NO_INPUT, "close after the end");
  /* A job without stdin_pipe reads /dev/null and takes no input. */
  conch_job_options none = {0};
  uint32_t deaf = start_ok(sh, &none, "cat; echo done");
  p = poll_until(sh, deaf, NULL, "cat of /dev/null");
  if (p) CHECK(str_eq(p->output, "done\n"), "its stdin was empty: \"%s\"", p->output);
  conch_job_poll_free(p);
  CHECK_RC(conch_shell_write(sh, deaf, (const uint8_t *)"x", 1), CONCH_ERR_NO_INPUT, "write to a job without input");
  conch_shell_free(sh);
}

/* A job on a terminal: its prompt shows, what is typed echoes, keys reach
 * it; the job's environment says TERM. */
static void test_a_pty_job(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_job_options o = {0};
  o.pty_cols = 100;
  o.pty_rows = 30;
  uint32_t job = start_ok(sh, &o, "read -r -p 'name? ' n; echo \"hi $n $TERM $(stty size)\"; read -r -p 'again? ' m; echo \"[$m]\"");
  conch_job_poll *p = poll_until(sh, job, "name\\? ", "the prompt");
  if (p) CHECK(str_eq(p->output, "name? ") && str_eq(p->status, "running"), "the prompt: \"%s\"", p->output);
  conch_job_poll_free(p);
  CHECK_RC(conch_shell_write(sh, job, (const uint8_t *)"ann\n", 4), CONCH_OK, "type ann");
  p = poll_until(sh, job, "again\\? ", "the second prompt");
  if (p) CHECK_STR(p->output, "ann\nhi ann xterm-256color 30 100\nagain? ", "the echo, the answer, the size");
  conch_job_poll_free(p);
  CHECK_RC(conch_shell_write(sh, job, (const uint8_t *)"ab", 2), CONCH_OK, "type ab");
  CHECK_RC(conch_shell_write_key(sh, job, "backspace"), CONCH_OK, "backspace");
  CHECK_RC(conch_shell_write_key(sh, job, "enter"), CONCH_OK, "enter");
  p = poll_until(sh, job, NULL, "to the end");
  if (p) {
    CHECK_STR(p->output, "a\n[a]\n", "backspace erased the b");
    CHECK(str_eq(p->status, "exited") && p->has_exit_code && p->exit_code == 0, "exited 0");
  }
  conch_job_poll_free(p);
  CHECK_RC(conch_shell_write_key(sh, job, "enter"), CONCH_ERR_NO_INPUT, "a key after the end");
  /* ctrl+c on the terminal interrupts what runs in the foreground there. */
  job = start_ok(sh, &o, "trap 'echo interrupted; exit 9' INT; echo ready; while :; do /bin/sleep 0.05; done");
  conch_job_poll_free(poll_until(sh, job, "ready", "ready"));
  CHECK_RC(conch_shell_write_key(sh, job, "ctrl+c"), CONCH_OK, "ctrl+c");
  p = poll_until(sh, job, NULL, "after ctrl+c");
  if (p) CHECK(strstr(p->output, "interrupted\n") != NULL && p->has_exit_code && p->exit_code == 9,
               "the trap ran (\"%s\", exit %d)", p->output, p->exit_code);
  conch_job_poll_free(p);
  CHECK_RC(conch_shell_write_key(sh, job, "no-such-key"), CONCH_ERR_INVALID_ARG, "an unknown key name");
  /* One side 0 is no terminal size. */
  conch_job_options half = {0};
  half.command = "true";
  half.pty_cols = 80;
  uint32_t id = 0;
  CHECK_RC(conch_shell_start(sh, &half, &id), CONCH_ERR_INVALID_ARG, "a terminal of 0 rows");
  CHECK(id == 0, "job_out untouched");
  conch_shell_free(sh);
}

/* Kill takes the job's whole tree down at once and returns its last poll;
 * signals reach its processes. */
static void test_kill_and_signal(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_job_options o = {0};
  uint32_t job = start_ok(sh, &o, "echo up; /bin/sleep 100 & /bin/sleep 100");
  conch_job_poll_free(poll_until(sh, job, "up", "up"));
  double t0 = now_s();
  conch_job_poll *p = NULL;
  CHECK_RC(conch_shell_kill_job(sh, job, &p), CONCH_OK, "kill");
  CHECK(now_s() - t0 < LONG_BEFORE_THE_SLEEP, "the kill did not wait for the sleeps");
  if (p) {
    CHECK_STR(p->status, "killed", "killed");
    CHECK(!p->has_exit_code, "no exit code for a killed job");
    CHECK_STR(p->output, "", "read already");
  }
  conch_job_poll_free(p);
  CHECK_RC(conch_shell_kill_job(sh, job, NULL), CONCH_OK, "a second kill, out NULL: no error");
  uint32_t found = 0;
  bool any = false;
  CHECK_RC(conch_shell_wait_any(sh, &job, 1, 0, NULL, &found, &any), CONCH_OK, "wait for the killed job");
  CHECK(any && found == job, "it has ended");

  /* (A busy loop: bash would report a child killed by the TERM too.) */
  job = start_ok(sh, &o, "trap 'echo got TERM; exit 7' TERM; echo ready; while :; do :; done");
  conch_job_poll_free(poll_until(sh, job, "ready", "ready"));
  CHECK_RC(conch_shell_signal(sh, job, "sigterm"), CONCH_OK, "SIGTERM by name, any case");
  p = poll_until(sh, job, NULL, "after TERM");
  if (p) CHECK(str_eq(p->output, "got TERM\n") && p->has_exit_code && p->exit_code == 7,
               "the trap ran (\"%s\", %s, exit %d)", p->output, p->status, p->exit_code);
  conch_job_poll_free(p);
  CHECK_RC(conch_shell_signal(sh, job, "TERM"), CONCH_OK, "a signal to an ended job does nothing");
  CHECK_RC(conch_shell_signal(sh, job, "NOPE"), CONCH_ERR_INVALID_ARG, "an unknown signal");
  CHECK(strstr(conch_last_error(), "signal must be a signal name") != NULL, "the core's words: \"%s\"",
        conch_last_error());
  /* (A signal reaches the processes the job runs when it is sent: wait
   * until the command runs; exec, so no process is forked meanwhile.) */
  job = start_ok(sh, &o, "echo ready; exec /bin/sleep 100");
  conch_job_poll_free(poll_until(sh, job, "ready", "ready"));
  CHECK_RC(conch_shell_signal(sh, job, "9"), CONCH_OK, "signal 9 by number");
  CHECK_RC(conch_shell_wait_any(sh, &job, 1, LONG_WAIT_MS, NULL, &found, &any), CONCH_OK, "wait");
  CHECK(any && found == job, "SIGKILL ended it");
  conch_shell_free(sh);
}

/* max_jobs refuses a start with its own status (nothing started); a slot
 * freed lets the next start in. A job's own timeout kills it. */
static void test_the_job_limit_and_a_timeout(void) {
  conch_shell_options so = {0};
  so.snapshot = "none";
  so.max_jobs = 2;
  conch_shell *sh = conch_shell_new(&so);
  if (!CHECK(sh != NULL, "a shell with max_jobs 2")) return;
  conch_job_options o = {0};
  uint32_t first = start_ok(sh, &o, "/bin/sleep 100");
  start_ok(sh, &o, "/bin/sleep 100");
  o.command = "echo third";
  uint32_t third = 0;
  CHECK_RC(conch_shell_start(sh, &o, &third), CONCH_ERR_TOO_MANY_JOBS, "a third start");
  CHECK_STR(conch_last_error(),
            "2 jobs are running in this session, the most it runs at once: wait for one to end or kill one",
            "the core's words");
  CHECK(third == 0, "job_out untouched");
  conch_job_info *jobs = NULL;
  size_t n = 0;
  if (CHECK_RC(conch_shell_jobs(sh, &jobs, &n), CONCH_OK, "jobs")) CHECK(n == 2, "nothing started (%zu)", n);
  conch_job_info_free(jobs, n);
  /* At the limit, a run past yield_after_ms stays in the foreground. */
  conch_run_options ro = {0};
  ro.command = "/bin/sleep 0.3; echo fg";
  ro.yield_after_ms = 50;
  conch_bash_result *r = NULL;
  if (CHECK_RC(conch_shell_run(sh, &ro, NULL, NULL, &r), CONCH_OK, "a run at the limit"))
    CHECK(str_eq(r->output, "fg\n") && !r->has_backgrounded, "in the foreground");
  conch_bash_result_free(r);
  CHECK_RC(conch_shell_kill_job(sh, first, NULL), CONCH_OK, "kill one");
  /* Long enough that the job's bash has started and printed when it fires,
     even under valgrind on a busy machine (300 ms was not, once). */
  o.timeout_ms = 3000;
  uint32_t timed = start_ok(sh, &o, "echo started; /bin/sleep 100");
  conch_job_poll *p = poll_until(sh, timed, NULL, "a job with a timeout");
  if (p) CHECK(str_eq(p->output, "started\n") && str_eq(p->status, "timed_out") && !p->has_exit_code,
               "its timeout killed it (%s)", p->status);
  conch_job_poll_free(p);
  conch_shell_free(sh);
}

/* A run still going at yield_after_ms returns with its output so far and
 * goes on as a job; the session keeps the state it had. */
static void test_yield_after(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_run_options ro = {0};
  ro.command = "cd /; echo first; /bin/sleep 1; echo done";
  ro.yield_after_ms = 300;
  conch_bash_result *r = NULL;
  uint32_t job = 0;
  if (CHECK_RC(conch_shell_run(sh, &ro, NULL, NULL, &r), CONCH_OK, "a run past yield_after")) {
    CHECK(r->has_backgrounded && r->backgrounded >= 1, "backgrounded");
    CHECK(!r->has_exit_code && !r->cancelled && !r->timed_out, "no exit code yet, not stopped");
    static const char notice[] = "[Command still running after 0.3 seconds: it goes on as background job ";
    CHECK(strncmp(r->output, notice, strlen(notice)) == 0, "the notice first: \"%s\"", r->output);
    size_t len = strlen(r->output);
    CHECK(len > 7 && strcmp(r->output + len - 7, "\nfirst\n") == 0, "then the output so far");
    job = r->backgrounded;
  }
  conch_bash_result_free(r);
  /* The cd of the backgrounded command does not apply to the session. */
  char cwd[4096], want[4200];
  if (SETUP(getcwd(cwd, sizeof cwd) != NULL, "getcwd")) {
    snprintf(want, sizeof want, "%s\n", cwd);
    run_expect(sh, "pwd", want);
  }
  conch_job_poll *p = poll_until(sh, job, NULL, "the backgrounded run");
  if (p) CHECK(str_eq(p->output, "done\n") && p->has_exit_code && p->exit_code == 0, "it ended as a job");
  conch_job_poll_free(p);
  ro.command = "true";
  ro.yield_after_ms = UINT64_MAX;
  CHECK_RC(conch_shell_run(sh, &ro, NULL, NULL, &r), CONCH_ERR_INVALID_ARG, "yield_after_ms past the bound");
  CHECK(strstr(conch_last_error(), "opts->yield_after_ms") != NULL, "names the field: \"%s\"", conch_last_error());
  conch_shell_free(sh);
}

/* What on_job_exit was told, copied during the calls. */
struct exit_log {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  conch_shell *sh; /* polled from inside the callback */
  size_t calls;
  bool concurrent, in_call;
  uint32_t job[8];
  bool has_code[8];
  int32_t code[8];
  char status[8][16];
  char command[8][64];
  char polled[8][32]; /* what a poll of the job read inside the call */
};

static void on_exit_cb(void *user, const conch_job_info *job) {
  struct exit_log *log = user;
  pthread_mutex_lock(&log->mu);
  if (log->in_call) log->concurrent = true;
  log->in_call = true;
  size_t i = log->calls;
  pthread_mutex_unlock(&log->mu);
  if (i < 8) {
    log->job[i] = job->job;
    log->has_code[i] = job->has_exit_code;
    log->code[i] = job->exit_code;
    snprintf(log->status[i], sizeof log->status[i], "%s", job->status);
    snprintf(log->command[i], sizeof log->command[i], "%s", job->command);
    /* Calls on the shell work from inside the callback (while the shell is
     * being freed they find it closed). */
    conch_job_poll *p = NULL;
    if (conch_shell_poll(log->sh, job->job, NULL, &p) == CONCH_OK)
      snprintf(log->polled[i], sizeof log->polled[i], "%s", p->output);
    else
      snprintf(log->polled[i], sizeof log->polled[i], "(status)");
    conch_job_poll_free(p);
  }
  pthread_mutex_lock(&log->mu);
  log->in_call = false;
  log->calls++;
  pthread_cond_broadcast(&log->cond);
  pthread_mutex_unlock(&log->mu);
}

/* Waits (within the hang guard) until the callback was called `n` times. */
static bool wait_calls(struct exit_log *log, size_t n) {
  double deadline = now_s() + LONG_BEFORE_THE_SLEEP;
  pthread_mutex_lock(&log->mu);
  while (log->calls < n && now_s() < deadline) {
    pthread_mutex_unlock(&log->mu);
    usleep(2000);
    pthread_mutex_lock(&log->mu);
  }
  bool ok = log->calls >= n;
  pthread_mutex_unlock(&log->mu);
  return ok;
}

/* on_job_exit is called once per job, with its exit code, on a thread of
 * conch's; conch_shell_free reports the jobs it kills before it returns,
 * and nothing after. */
static void test_on_job_exit(void) {
  struct exit_log log = {0};
  pthread_mutex_init(&log.mu, NULL);
  pthread_cond_init(&log.cond, NULL);
  conch_shell_options so = {0};
  so.snapshot = "none";
  so.on_job_exit = on_exit_cb;
  so.user_data = &log;
  conch_shell *sh = conch_shell_new(&so);
  if (!CHECK(sh != NULL, "a shell with on_job_exit")) return;
  log.sh = sh;
  conch_job_options o = {0};
  uint32_t five = start_ok(sh, &o, "echo bye; exit 5");
  CHECK(wait_calls(&log, 1), "called for the job that exited");
  CHECK(log.job[0] == five && log.has_code[0] && log.code[0] == 5, "with its exit code (job %u, %d)",
        log.job[0], log.code[0]);
  CHECK_STR(log.status[0], "exited", "status");
  CHECK_STR(log.command[0], "echo bye; exit 5", "command");
  CHECK_STR(log.polled[0], "bye\n", "a poll from inside the callback reads the job");
  /* What a run leaves is a job too; a killed one is reported killed. */
  run_expect(sh, GATED("echo late"), "");
  run_expect(sh, RELEASE, "");
  CHECK(wait_calls(&log, 2), "called for the run's job");
  CHECK(log.calls >= 2 && !log.has_code[1] && str_eq(log.status[1], "exited"), "no exit code for it");
  uint32_t killed = start_ok(sh, &o, "/bin/sleep 100");
  CHECK_RC(conch_shell_kill_job(sh, killed, NULL), CONCH_OK, "kill");
  CHECK(wait_calls(&log, 3), "called for the killed job");
  CHECK(log.job[2] == killed && str_eq(log.status[2], "killed") && !log.has_code[2], "killed, no code");
  /* Two jobs running at the free: both reported before it returns. */
  start_ok(sh, &o, "/bin/sleep 100");
  start_ok(sh, &o, "/bin/sleep 100");
  conch_shell_free(sh);
  pthread_mutex_lock(&log.mu);
  size_t at_free = log.calls;
  pthread_mutex_unlock(&log.mu);
  CHECK(at_free == 5, "every job reported once, by the time conch_shell_free returned (%zu)", at_free);
  CHECK(str_eq(log.status[3], "killed") && str_eq(log.status[4], "killed"), "the free killed them");
  CHECK(str_eq(log.polled[3], "(status)"), "calls during the free find the shell closed");
  usleep(300 * 1000);
  CHECK(log.calls == at_free, "no call after conch_shell_free returned");
  CHECK(!log.concurrent, "never two calls at once");
  pthread_cond_destroy(&log.cond);
  pthread_mutex_destroy(&log.mu);
}

static struct exit_log freeing_log;

/* Frees the shell from inside its own callback. */
static void free_in_callback(void *user, const conch_job_info *job) {
  (void)job;
  struct exit_log *log = user;
  conch_shell_free(log->sh);
  pthread_mutex_lock(&log->mu);
  log->calls++;
  pthread_mutex_unlock(&log->mu);
}

static void test_free_from_inside_on_job_exit(void) {
  struct exit_log *log = &freeing_log;
  pthread_mutex_init(&log->mu, NULL);
  conch_shell_options so = {0};
  so.snapshot = "none";
  so.on_job_exit = free_in_callback;
  so.user_data = log;
  conch_shell *sh = conch_shell_new(&so);
  if (!CHECK(sh != NULL, "a shell freed by its callback")) return;
  log->sh = sh;
  conch_job_options o = {0};
  start_ok(sh, &o, "/bin/sleep 100"); /* killed by the free */
  start_ok(sh, &o, "true");
  CHECK(wait_calls(log, 1), "the callback ran (and freed the shell)");
  usleep(300 * 1000);
  CHECK(log->calls == 1, "the job the free killed is not reported after it (%zu calls)", log->calls);
  pthread_mutex_destroy(&log->mu);
}

struct waiter {
  conch_shell *sh;
  uint32_t job;
  const conch_cancel_token *cancel;
  pthread_mutex_t mu;
  bool entering;
  int rc;
  uint32_t found_job;
  bool found;
  double took;
};

static void *wait_any_in_thread(void *arg) {
  struct waiter *w = arg;
  pthread_mutex_lock(&w->mu);
  w->entering = true;
  pthread_mutex_unlock(&w->mu);
  double t0 = now_s();
  w->rc = conch_shell_wait_any(w->sh, &w->job, 1, LONG_WAIT_MS, w->cancel, &w->found_job, &w->found);
  w->took = now_s() - t0;
  return NULL;
}

/* wait_any returns the first job to end (in the list's order when several
 * had), none after its timeout, none when its token is cancelled; a free
 * ends a wait on another thread. */
static void test_wait_any(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_job_options o = {0};
  uint32_t slow = start_ok(sh, &o, "/bin/sleep 100");
  uint32_t quick = start_ok(sh, &o, "/bin/sleep 0.2");
  uint32_t ids[] = {slow, quick}, found = 0;
  bool any = false;
  double t0 = now_s();
  CHECK_RC(conch_shell_wait_any(sh, ids, 2, 300, NULL, &found, &any), CONCH_OK, "wait 300 ms");
  (void)t0;
  if (!any) CHECK_RC(conch_shell_wait_any(sh, ids, 2, LONG_WAIT_MS, NULL, &found, &any), CONCH_OK, "wait on");
  CHECK(any && found == quick, "the quick one ended (%u)", found);
  t0 = now_s();
  CHECK_RC(conch_shell_wait_any(sh, &slow, 1, 200, NULL, &found, &any), CONCH_OK, "wait for the slow one");
  CHECK(!any && found == 0, "none in time");
  CHECK(now_s() - t0 >= 0.15, "the timeout was waited out");
  CHECK_RC(conch_shell_wait_any(sh, ids, 2, 0, NULL, &found, &any), CONCH_OK, "no wait");
  CHECK(any && found == quick, "an ended job returns at once");
  CHECK_RC(conch_shell_wait_any(sh, &slow, 1, 2147483648ULL, NULL, &found, &any), CONCH_ERR_INVALID_ARG,
           "timeout_ms past the bound");
  CHECK(strstr(conch_last_error(), "conch_shell_wait_any: timeout_ms must be") != NULL, "names it: \"%s\"",
        conch_last_error());
  uint32_t unknown[] = {slow, 99};
  CHECK_RC(conch_shell_wait_any(sh, unknown, 2, 0, NULL, &found, &any), CONCH_ERR_NOT_FOUND, "an unknown id");
  CHECK_STR(conch_last_error(), "no job 99 in this session", "the core's words");

  /* A cancel token ends the wait, not the job. */
  conch_cancel_token *token = conch_cancel_token_new();
  struct waiter w = {0};
  w.sh = sh;
  w.job = slow;
  w.cancel = token;
  pthread_mutex_init(&w.mu, NULL);
  pthread_t t;
  pthread_create(&t, NULL, wait_any_in_thread, &w);
  wait_entering(&w.mu, &w.entering);
  conch_cancel_token_cancel(token);
  pthread_join(t, NULL);
  CHECK_RC(w.rc, CONCH_OK, "a cancelled wait");
  CHECK(!w.found && w.took < LONG_BEFORE_THE_SLEEP, "ended by the cancel (%.2f s), none found", w.took);
  conch_cancel_token_free(token);
  pthread_mutex_destroy(&w.mu);

  /* A free ends a wait on another thread: the job it kills ends. */
  struct waiter f = {0};
  f.sh = sh;
  f.job = slow;
  pthread_mutex_init(&f.mu, NULL);
  pthread_create(&t, NULL, wait_any_in_thread, &f);
  wait_entering(&f.mu, &f.entering);
  conch_shell_free(sh);
  pthread_join(t, NULL);
  CHECK(f.rc == CONCH_OK || f.rc == CONCH_ERR_CLOSED, "the wait returns (%d)", f.rc);
  if (f.rc == CONCH_OK) CHECK(f.found && f.found_job == slow, "the killed job ended");
  CHECK(f.took < LONG_BEFORE_THE_SLEEP, "the free ended the wait (%.2f s)", f.took);
  pthread_mutex_destroy(&f.mu);
}

struct starter {
  conch_shell *sh;
  pthread_mutex_t mu;
  bool entering;
  int rc;
  uint32_t job;
};

static void *start_in_thread(void *arg) {
  struct starter *s = arg;
  pthread_mutex_lock(&s->mu);
  s->entering = true;
  pthread_mutex_unlock(&s->mu);
  conch_job_options o = {0};
  o.command = "echo never";
  s->rc = conch_shell_start(s->sh, &o, &s->job);
  return NULL;
}

struct runner {
  conch_shell *sh;
  int rc;
};

static void *run_in_thread(void *arg) {
  struct runner *r = arg;
  conch_run_options o = {0};
  o.command = "/bin/sleep 100";
  conch_bash_result *res = NULL;
  r->rc = conch_shell_run(r->sh, &o, NULL, NULL, &res);
  conch_bash_result_free(res);
  return NULL;
}

/* Unknown jobs are CONCH_ERR_NOT_FOUND for every call; a start waiting for
 * its turn behind a run when the shell is freed finds it closed, and
 * starts nothing. */
static void test_job_misuse(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_job_poll *p = NULL;
  CHECK_RC(conch_shell_write(sh, 99, (const uint8_t *)"x", 1), CONCH_ERR_NOT_FOUND, "write");
  CHECK_RC(conch_shell_close_stdin(sh, 99), CONCH_ERR_NOT_FOUND, "close_stdin");
  CHECK_RC(conch_shell_write_key(sh, 99, "enter"), CONCH_ERR_NOT_FOUND, "write_key");
  CHECK_RC(conch_shell_signal(sh, 99, "TERM"), CONCH_ERR_NOT_FOUND, "signal");
  CHECK_RC(conch_shell_kill_job(sh, 0, &p), CONCH_ERR_NOT_FOUND, "kill of job 0");
  CHECK_RC(conch_shell_kill_job(sh, UINT32_MAX, &p), CONCH_ERR_NOT_FOUND, "kill of job UINT32_MAX");
  CHECK_STR(conch_last_error(), "no job 4294967295 in this session", "the core's words");
  CHECK(p == NULL, "out untouched");
  conch_job_options o = {0};
  o.command = "true";
  o.cwd = "/no/such/dir";
  uint32_t job = 0;
  CHECK_RC(conch_shell_start(sh, &o, &job), CONCH_ERR_INVALID_ARG, "a missing cwd");
  CHECK(strstr(conch_last_error(), "/no/such/dir") != NULL, "names it: \"%s\"", conch_last_error());
  o.cwd = NULL;
  const char *bad_env[] = {"1X=y", NULL};
  o.env = bad_env;
  CHECK_RC(conch_shell_start(sh, &o, &job), CONCH_ERR_INVALID_ARG, "a bad variable name");
  const char *no_eq[] = {"X", NULL};
  o.env = no_eq;
  CHECK_RC(conch_shell_start(sh, &o, &job), CONCH_ERR_INVALID_ARG, "not KEY=VALUE");
  CHECK(job == 0, "job_out untouched");
  conch_job_info *jobs = NULL;
  size_t n = 9;
  CHECK_RC(conch_shell_jobs(sh, &jobs, &n), CONCH_OK, "jobs");
  CHECK(n == 0, "nothing started");
  conch_job_info_free(jobs, n);

  /* A run blocks; a start queues behind it; the free ends both. */
  struct runner r = {sh, 0};
  pthread_t rt, st;
  pthread_create(&rt, NULL, run_in_thread, &r);
  usleep(300 * 1000);
  struct starter s = {0};
  s.sh = sh;
  pthread_mutex_init(&s.mu, NULL);
  pthread_create(&st, NULL, start_in_thread, &s);
  for (;;) {
    pthread_mutex_lock(&s.mu);
    bool in = s.entering;
    pthread_mutex_unlock(&s.mu);
    if (in) break;
    usleep(1000);
  }
  usleep(300 * 1000);
  conch_shell_free(sh);
  pthread_join(rt, NULL);
  pthread_join(st, NULL);
  CHECK_RC(r.rc, CONCH_OK, "the run returns (cancelled)");
  CHECK_RC(s.rc, CONCH_ERR_CLOSED, "the start finds the shell closed");
  CHECK(s.job == 0, "nothing started");
  pthread_mutex_destroy(&s.mu);
}

int main(void) {
  test_a_pipe_job_answers();
  test_a_pty_job();
  test_kill_and_signal();
  test_the_job_limit_and_a_timeout();
  test_yield_after();
  test_on_job_exit();
  test_free_from_inside_on_job_exit();
  test_wait_any();
  test_job_misuse();
  return check_finish();
}
