/* A shell on a `conch serve` through the C API: conch_remote_connect_command
 * starts the release build's `conch serve --stdio` (CONCH_BIN), and the
 * shell conch_remote_shell opens there is driven by the conch_shell_* calls
 * of a local one: runs with streamed chunks, state kept, jobs polled and
 * their ends told to on_job_exit, background jobs, free closing the session
 * (its processes gone). The connection's own errors have their codes. Real
 * server, real processes. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "chunks.h"

static const char *conch_bin(void) {
  const char *bin = getenv("CONCH_BIN");
  return bin != NULL ? bin : "conch";
}

static conch_remote *connect_stdio(void) {
  const char *argv[] = {conch_bin(), "serve", "--stdio", NULL};
  conch_remote *remote = NULL;
  CHECK_RC(conch_remote_connect_command(argv, &remote), CONCH_OK, "connect over stdio");
  return remote;
}

static conch_shell *remote_shell(conch_remote *remote, const char *json) {
  conch_shell_options o = {0};
  o.options_json = json;
  conch_shell *sh = NULL;
  CHECK_RC(conch_remote_shell(remote, &o, &sh), CONCH_OK, json);
  return sh;
}

static void test_a_remote_shell_runs_as_a_local_one(void) {
  conch_remote *remote = connect_stdio();
  if (remote == NULL)
    return;
  conch_shell *sh = remote_shell(remote, "{\"cwd\": \"/tmp\", \"snapshot\": \"none\"}");
  if (sh == NULL) {
    conch_remote_free(remote);
    return;
  }
  conch_run_options o = {0};
  o.command = "export KEPT=kept; echo one; echo two >&2; pwd; (exit 3)";
  struct chunks c;
  chunks_init(&c, NULL);
  conch_bash_result *r = NULL;
  if (CHECK_RC(conch_shell_run(sh, &o, on_chunk, &c, &r), CONCH_OK, "run")) {
    CHECK_STR(r->output, "one\ntwo\n/tmp\n", "output");
    CHECK_STR(c.text, "one\ntwo\n/tmp\n", "streamed chunks");
    CHECK(!c.wrong_thread && !c.not_terminated, "chunks on the calling thread, NUL-ended");
    CHECK(r->has_exit_code && r->exit_code == 3, "exit code 3, got %d", r->exit_code);
    CHECK_STR(r->working_dir, "/tmp", "working dir");
  }
  conch_bash_result_free(r);
  chunks_destroy(&c);

  o.command = "echo $KEPT";
  r = NULL;
  if (CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_OK, "state kept"))
    CHECK_STR(r->output, "kept\n", "the variable set by the first run");
  conch_bash_result_free(r);

  /* A bad value is refused with the core's text, the session lives on. */
  o.options_json = "{\"timeout\": -1}";
  r = NULL;
  CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_ERR_INVALID_ARG, "a negative timeout");
  CHECK(strstr(conch_last_error(), "timeout") != NULL, "names timeout: %s", conch_last_error());
  CHECK(r == NULL, "*out untouched");

  conch_sandbox_applied *applied = NULL;
  CHECK_RC(conch_shell_sandbox_applied(sh, &applied), CONCH_ERR_NOT_FOUND, "no sandbox");
  conch_shell_free(sh);
  conch_remote_free(remote);
}

typedef struct {
  pthread_mutex_t lock;
  int ended;
  /* The status of each job told, by id (the ids a test uses are small). */
  char status[8][16];
} exits;

static void on_exit_cb(void *user, const conch_job_info *job) {
  exits *e = user;
  pthread_mutex_lock(&e->lock);
  e->ended++;
  if (job->job < 8)
    snprintf(e->status[job->job], sizeof e->status[0], "%s", job->status);
  pthread_mutex_unlock(&e->lock);
}

static void test_jobs_and_background_work(void) {
  conch_remote *remote = connect_stdio();
  if (remote == NULL)
    return;
  exits e = {.lock = PTHREAD_MUTEX_INITIALIZER};
  conch_shell_options so = {0};
  so.options_json = "{\"snapshot\": \"none\"}";
  so.on_job_exit = on_exit_cb;
  so.user_data = &e;
  conch_shell *sh = NULL;
  if (!CHECK_RC(conch_remote_shell(remote, &so, &sh), CONCH_OK, "shell with on_job_exit")) {
    conch_remote_free(remote);
    return;
  }
  conch_job_options jo = {0};
  jo.command = "echo from-the-job; exit 4";
  uint32_t job = 0;
  CHECK_RC(conch_shell_start(sh, &jo, &job), CONCH_OK, "start");
  conch_poll_options po = {0};
  po.wait_ms = 20000;
  conch_job_poll *p = NULL;
  if (CHECK_RC(conch_shell_poll(sh, job, &po, &p), CONCH_OK, "poll to the end")) {
    CHECK_STR(p->output, "from-the-job\n", "the job's output");
    CHECK_STR(p->status, "exited", "status");
    CHECK(p->has_exit_code && p->exit_code == 4, "exit code 4");
  }
  conch_job_poll_free(p);
  conch_job_info *jobs = NULL;
  size_t count = 0;
  if (CHECK_RC(conch_shell_jobs(sh, &jobs, &count), CONCH_OK, "jobs"))
    CHECK(count == 1 && jobs[0].job == job, "one job listed, got %zu", count);
  conch_job_info_free(jobs, count);

  conch_run_options o = {0};
  o.command = "/bin/sleep 3077.25 & echo started";
  conch_bash_result *r = NULL;
  CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_OK, "background work");
  conch_bash_result_free(r);
  uint32_t pids[4];
  size_t n = 0;
  if (CHECK_RC(conch_shell_background_jobs(sh, pids, 4, &n), CONCH_OK, "background_jobs"))
    CHECK(n == 1 && kill((pid_t)pids[0], 0) == 0, "one live background pid, got %zu", n);

  /* Freed: the session is closed on the server, its processes killed, and
   * every end reported before the free returns: the started job's, and the
   * background sleep's (work a command leaves behind is a job too). */
  conch_shell_free(sh);
  pthread_mutex_lock(&e.lock);
  CHECK(e.ended == 2, "two ends told, got %d", e.ended);
  CHECK_STR(e.status[job], "exited", "the started job exited");
  CHECK_STR(e.status[job + 1], "killed", "the background sleep was killed by the free");
  pthread_mutex_unlock(&e.lock);
  int alive = 1;
  for (int i = 0; i < 200 && alive; i++) {
    alive = n == 1 && kill((pid_t)pids[0], 0) == 0;
    if (alive)
      usleep(50 * 1000);
  }
  CHECK(!alive, "the background sleep is gone once the shell is freed");
  conch_remote_free(remote);
}

static void test_connection_errors(void) {
  conch_remote *remote = NULL;
  /* Nothing listens on port 1. */
  CHECK_RC(conch_remote_connect("ws://127.0.0.1:1", NULL, &remote), CONCH_ERR_CONNECTION_LOST,
           "no server");
  CHECK(remote == NULL, "*out untouched");
  const char *missing[] = {"/nonexistent/conch", "serve", "--stdio", NULL};
  CHECK_RC(conch_remote_connect_command(missing, &remote), CONCH_ERR_CONNECTION_LOST,
           "a command that cannot start");
  const char *empty[] = {NULL};
  CHECK_RC(conch_remote_connect_command(empty, &remote), CONCH_ERR_INVALID_ARG, "empty argv");

  remote = connect_stdio();
  if (remote == NULL)
    return;
  conch_shell_options o = {0};
  o.cwd = "/tmp";
  conch_shell *sh = NULL;
  CHECK_RC(conch_remote_shell(remote, &o, &sh), CONCH_ERR_INVALID_ARG, "a typed field");
  CHECK(strstr(conch_last_error(), "opts->cwd") != NULL, "names the field: %s",
        conch_last_error());
  o.cwd = NULL;
  o.options_json = "{\"cwd\": \"/nonexistent/dir\"}";
  CHECK(conch_remote_shell(remote, &o, &sh) < 0, "a cwd the server lacks");
  CHECK(strstr(conch_last_error(), "/nonexistent/dir") != NULL, "names it: %s",
        conch_last_error());
  CHECK(sh == NULL, "*out untouched");

  /* A shell whose connection was freed fails with CONNECTION_LOST. */
  sh = remote_shell(remote, "{\"snapshot\": \"none\"}");
  conch_remote_free(remote);
  if (sh != NULL) {
    conch_run_options ro = {0};
    ro.command = "true";
    conch_bash_result *r = NULL;
    CHECK_RC(conch_shell_run(sh, &ro, NULL, NULL, &r), CONCH_ERR_CONNECTION_LOST, "after free");
    conch_shell_free(sh);
  }
}

/* The server dies under the client (killed by its own session's command):
 * later calls fail with CONCH_ERR_CONNECTION_LOST and the host lives on (a
 * write to the dead server's pipe is EPIPE, never a SIGPIPE, whose default
 * a C host keeps, killing it). */
static void test_a_dead_server_is_a_lost_connection(void) {
  conch_remote *remote = connect_stdio();
  if (remote == NULL)
    return;
  conch_shell *sh = remote_shell(remote, "{\"snapshot\": \"none\"}");
  if (sh != NULL) {
    conch_run_options o = {0};
    o.command = "kill -9 $PPID";
    conch_bash_result *r = NULL;
    int rc = conch_shell_run(sh, &o, NULL, NULL, &r);
    CHECK(rc == CONCH_ERR_CONNECTION_LOST, "the run that killed the server: %d", rc);
    conch_bash_result_free(r);
    for (int i = 0; i < 20; i++) {
      o.command = "true";
      r = NULL;
      rc = conch_shell_run(sh, &o, NULL, NULL, &r);
      conch_bash_result_free(r);
      if (!CHECK_RC(rc, CONCH_ERR_CONNECTION_LOST, "a run on the dead server"))
        break;
    }
    conch_shell_free(sh);
  }
  conch_remote_free(remote);
}

int main(void) {
  test_a_remote_shell_runs_as_a_local_one();
  test_jobs_and_background_work();
  test_connection_errors();
  test_a_dead_server_is_a_lost_connection();
  return check_finish();
}
