/* Issue #15's acceptance list for jobs, through the C API, with real
 * processes (what tests/c/test_jobs.c does not cover already): a server
 * reached from the session and killed with its port; a slow printer
 * polled every 0.3 s, each line read once; `yes` bounded by max_bytes and
 * its artifact stopped at job_artifact_cap; races between concurrent
 * polls, writes, a kill and a job's exit; a job timeout killing its whole
 * tree, a setsid escape included. The Rust versions are in
 * core/tests/shell/started.rs and core/tests/job_flood.rs. Under valgrind
 * only this process is traced: the jobs run at full speed, so the bounds
 * below are hang guards, never measures of speed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "jobs.h"
#include "scratch.h"

/* A bound far above what any wait below takes: a hang guard. */
#define HANG_GUARD 20.0

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static conch_job_poll *poll_wait(conch_shell *sh, uint32_t job, uint64_t wait_ms, const char *until,
                                 const char *what) {
  conch_poll_options o = {0};
  o.wait_ms = wait_ms;
  o.until = until;
  return poll_ok(sh, job, &o, what);
}

/* A unique duration for /bin/sleep, so /proc tells its processes apart
 * from every other test's (and from the shells that merely mention it). */
static void unique_sleep(char *out, size_t size, int base) {
  static int n;
  snprintf(out, size, "%d.%03d%05d", base, ++n, (int)(getpid() % 100000));
}

/* Live (not zombie) processes with an argument exactly `arg`. */
static int procs_with_arg(const char *arg) {
  DIR *d = opendir("/proc");
  if (!d) return -1;
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == getpid()) continue;
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    bool has = false;
    for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
      if (strcmp(buf + i, arg) == 0) has = true;
    if (!has) continue;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    f = fopen(path, "r");
    if (!f) continue;
    len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    char *close = strrchr(buf, ')');
    if (close && close[1] == ' ' && close[2] == 'Z') continue;
    count++;
  }
  closedir(d);
  return count;
}

/* Waits (within the hang guard) until `arg`'s process count is `n`. */
static bool wait_procs(const char *arg, int n) {
  double deadline = now_s() + HANG_GUARD;
  for (;;) {
    if (procs_with_arg(arg) == n) return true;
    if (now_s() > deadline) return false;
    sleep_ms(20);
  }
}

/* 1. A server started as a job: `until` sees its banner long before the
 * wait ends; the session reaches it; the kill ends it, its port and every
 * process of it. */
static void test_a_server_job(void) {
  char dir[] = "/tmp/conch-ctest-server-XXXXXX";
  if (!SETUP(mkdtemp(dir) != NULL, "mkdtemp")) return;
  conch_shell *sh = new_shell();
  if (sh) {
    char command[256];
    /* The served directory is the unique argument /proc finds it by. */
    snprintf(command, sizeof command, "exec python3 -m http.server 0 --bind 127.0.0.1 --directory %s", dir);
    const char *env[] = {"PYTHONUNBUFFERED=1", NULL};
    conch_job_options o = {0};
    o.env = env;
    uint32_t job = start_ok(sh, &o, command);
    double t0 = now_s();
    conch_job_poll *p = poll_wait(sh, job, LONG_WAIT_MS, "Serving HTTP on \\S+ port \\d+", "until the banner");
    double took = now_s() - t0;
    CHECK(took < HANG_GUARD, "until ended the wait (%.2f s)", took);
    long port = 0;
    if (p) {
      CHECK_STR(p->status, "running", "the server runs");
      const char *at = strstr(p->output, " port ");
      if (CHECK(at != NULL, "the banner names the port: \"%s\"", p->output)) port = strtol(at + 6, NULL, 10);
    }
    conch_job_poll_free(p);
    CHECK(port > 0 && port < 65536, "a port (%ld)", port);

    /* The session reaches it (python's urllib: no curl needed). */
    char fetch[512];
    snprintf(fetch, sizeof fetch,
             "python3 -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:%ld/\", timeout=10).status, "
             "end=\"\")'",
             port);
    conch_run_options ro = {0};
    ro.command = fetch;
    conch_bash_result *r = NULL;
    if (CHECK_RC(conch_shell_run(sh, &ro, NULL, NULL, &r), CONCH_OK, "fetch from the session"))
      CHECK_STR(r->output, "200", "the server answered the session");
    conch_bash_result_free(r);
    CHECK(procs_with_arg(dir) == 1, "one server process (%d)", procs_with_arg(dir));

    conch_job_poll *fin = NULL;
    t0 = now_s();
    CHECK_RC(conch_shell_kill_job(sh, job, &fin), CONCH_OK, "kill the server");
    CHECK(now_s() - t0 < HANG_GUARD, "the kill returned (%.2f s)", now_s() - t0);
    if (fin) {
      CHECK_STR(fin->status, "killed", "the final poll says killed");
      CHECK(!fin->has_exit_code, "no exit code for a killed job");
    }
    conch_job_poll_free(fin);

    /* Its port is closed once the kill returned. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (SETUP(fd >= 0, "socket") && port > 0) {
      struct sockaddr_in addr = {0};
      addr.sin_family = AF_INET;
      addr.sin_port = htons((uint16_t)port);
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      int rc = connect(fd, (struct sockaddr *)&addr, sizeof addr);
      CHECK(rc != 0, "nothing listens on port %ld after the kill (connect: %d, errno %d)", port, rc, errno);
    }
    if (fd >= 0) close(fd);
    CHECK(procs_with_arg(dir) == 0, "no server process left (%d)", procs_with_arg(dir));

    conch_job_info *jobs = NULL;
    size_t n = 0;
    if (CHECK_RC(conch_shell_jobs(sh, &jobs, &n), CONCH_OK, "jobs") && CHECK(n == 1, "one job (%zu)", n))
      CHECK_STR(jobs[0].status, "killed", "listed killed");
    conch_job_info_free(jobs, n);
    conch_shell_free(sh);
  }
  remove_tree(dir);
}

/* 2. A job printing a line every 0.1 s, polled every 0.3 s without a wait:
 * each line read exactly once, in order; the last poll says exited 0. */
static void test_polls_read_each_line_once(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_job_options o = {0};
  uint32_t job = start_ok(sh, &o, "for i in $(seq 1 50); do echo $i; /bin/sleep 0.1; done");
  char expected[256] = "", text[1024] = "";
  for (int i = 1; i <= 50; i++) snprintf(expected + strlen(expected), sizeof expected - strlen(expected), "%d\n", i);
  size_t polls = 0;
  bool skipped = false, overflow = false, ended = false;
  conch_job_poll *last = NULL;
  /* 50 lines at 0.1 s take ~5 s: 200 polls (60 s) is the hang guard. */
  for (; polls < 200 && !ended; polls++) {
    sleep_ms(300);
    conch_job_poll_free(last);
    last = poll_wait(sh, job, 0, NULL, "a poll every 0.3 s");
    if (!last) break;
    if (last->omitted_bytes != 0) skipped = true;
    if (strlen(text) + strlen(last->output) >= sizeof text)
      overflow = true;
    else
      strcat(text, last->output);
    ended = !str_eq(last->status, "running");
  }
  CHECK(ended, "the job ended within %zu polls", polls);
  CHECK(!skipped && !overflow, "nothing omitted, nothing past 1..50");
  CHECK_STR(text, expected, "the polls together read 1..50 once each");
  CHECK(polls > 5, "it took several polls (%zu)", polls);
  if (last) {
    CHECK_STR(last->status, "exited", "the last poll");
    CHECK(last->has_exit_code && last->exit_code == 0, "exit code 0 (%d, %d)", last->has_exit_code,
          last->exit_code);
  }
  conch_job_poll_free(last);
  conch_shell_free(sh);
}

/* The size of the file `<dir>/<id>.*` (-1: none). */
static long long artifact_size(const char *dir, const char *id) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  char prefix[128];
  snprintf(prefix, sizeof prefix, "%s.", id);
  long long size = -1;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &st) == 0) size = (long long)st.st_size;
  }
  closedir(d);
  return size;
}

/* 3. `yes` for a few seconds: every poll within max_bytes, saying what it
 * skipped; the artifact stops at exactly job_artifact_cap; the kill
 * returns promptly. */
static void test_yes_stays_bounded(void) {
  char dir[] = "/tmp/conch-ctest-yes-XXXXXX";
  if (!SETUP(mkdtemp(dir) != NULL, "mkdtemp")) return;
  const uint64_t cap = 1 << 20;
  const size_t max_bytes = 4096;
  conch_shell_options so = {0};
  so.snapshot = "none";
  so.artifacts_dir = dir;
  so.max_bytes = max_bytes;
  so.job_artifact_cap = cap;
  conch_shell *sh = conch_shell_new(&so);
  if (CHECK(sh != NULL, "a shell with a 1 MiB job artifact cap")) {
    conch_job_options o = {0};
    uint32_t job = start_ok(sh, &o, "yes");
    double end = now_s() + 3.0;
    size_t polls = 0, too_long = 0, bad_text = 0, not_running = 0, bad_cursor = 0;
    uint64_t next = 0;
    conch_job_poll *last = NULL;
    while (now_s() < end) {
      conch_job_poll_free(last);
      last = poll_wait(sh, job, 300, NULL, "poll yes"); /* max_bytes 0: the shell's */
      if (!last) break;
      polls++;
      size_t len = strlen(last->output);
      if (len > max_bytes) too_long++;
      if (strspn(last->output, "y\n") != len) bad_text++;
      if (!str_eq(last->status, "running")) not_running++;
      /* What it skipped is said: from where the last poll stopped to where
       * this one's output starts; the output reaches next_cursor. */
      if (last->cursor != next + last->omitted_bytes || last->next_cursor != last->cursor + len) bad_cursor++;
      next = last->next_cursor;
    }
    CHECK(polls >= 3 && too_long == 0, "%zu polls, each within max_bytes (%zu past it)", polls, too_long);
    CHECK(bad_text == 0 && not_running == 0, "only y lines, running throughout (%zu, %zu)", bad_text, not_running);
    CHECK(bad_cursor == 0, "every poll's cursor accounts for what it skipped (%zu wrong)", bad_cursor);
    char id[64] = "";
    if (last) {
      CHECK(last->omitted_bytes > 0, "the last poll skipped some (%llu)", (unsigned long long)last->omitted_bytes);
      CHECK(last->artifact_truncated, "the artifact stopped at the cap");
      CHECK(last->total_bytes > 2 * cap, "yes wrote past the cap (%llu)", (unsigned long long)last->total_bytes);
      if (CHECK(last->artifact_id != NULL, "an artifact")) snprintf(id, sizeof id, "%s", last->artifact_id);
    }
    conch_job_poll_free(last);

    conch_job_poll *fin = NULL;
    double t0 = now_s();
    CHECK_RC(conch_shell_kill_job(sh, job, &fin), CONCH_OK, "kill yes");
    double took = now_s() - t0;
    CHECK(took < 10.0, "the kill returned promptly (%.2f s)", took);
    if (fin) {
      CHECK_STR(fin->status, "killed", "killed");
      CHECK(strlen(fin->output) <= max_bytes, "the final poll within max_bytes too (%zu)", strlen(fin->output));
      CHECK(fin->artifact_truncated, "the final poll says truncated");
      CHECK_STR(fin->artifact_id, id[0] ? id : NULL, "the same artifact");
    }
    conch_job_poll_free(fin);
    if (id[0]) {
      long long size = artifact_size(dir, id);
      CHECK(size == (long long)cap, "the artifact file is exactly the cap (%lld)", size);
    }
    conch_job_info *jobs = NULL;
    size_t n = 0;
    if (CHECK_RC(conch_shell_jobs(sh, &jobs, &n), CONCH_OK, "jobs") && CHECK(n == 1, "one job"))
      CHECK(jobs[0].artifact_truncated && str_eq(jobs[0].status, "killed"), "listed truncated, killed");
    conch_job_info_free(jobs, n);
    conch_shell_free(sh);
  }
  remove_tree(dir);
}

/* 4. Races. */

#define MAX_PIECES 1024

/* What the polls of one job read, piece by piece, from two threads. */
struct pieces {
  pthread_mutex_t mu;
  conch_shell *sh;
  uint32_t job;
  size_t n;
  uint64_t at[MAX_PIECES];
  char *text[MAX_PIECES];
  size_t bytes;   /* all pieces together */
  size_t errors;  /* polls that failed or skipped */
};

struct racer {
  struct pieces *seen;
  char status[32];
  size_t polls;
};

static void keep(struct pieces *s, const conch_job_poll *p) {
  pthread_mutex_lock(&s->mu);
  if (p->omitted_bytes != 0) s->errors++;
  if (p->output[0] != '\0') {
    if (s->n < MAX_PIECES) {
      s->at[s->n] = p->cursor;
      s->text[s->n] = strdup(p->output);
      s->n++;
    } else {
      s->errors++;
    }
    s->bytes += strlen(p->output);
  }
  pthread_mutex_unlock(&s->mu);
}

static void *poll_loop(void *arg) {
  struct racer *r = arg;
  struct pieces *s = r->seen;
  conch_poll_options o = {0};
  o.wait_ms = 200;
  /* 300 polls of 200 ms (60 s): the hang guard. */
  for (r->polls = 0; r->polls < 300; r->polls++) {
    conch_job_poll *p = NULL;
    if (conch_shell_poll(s->sh, s->job, &o, &p) != CONCH_OK) {
      pthread_mutex_lock(&s->mu);
      s->errors++;
      pthread_mutex_unlock(&s->mu);
      break;
    }
    keep(s, p);
    bool running = str_eq(p->status, "running");
    snprintf(r->status, sizeof r->status, "%s", p->status);
    conch_job_poll_free(p);
    if (!running) break;
  }
  return NULL;
}

/* Joins `t` within the hang guard; a thread still stuck is a failure the
 * test cannot recover from (it holds the shell). */
static void join_or_die(pthread_t t, const char *what) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 60;
  if (pthread_timedjoin_np(t, NULL, &until) != 0) {
    fprintf(stderr, "FAIL: %s did not return within 60 s\n", what);
    exit(1);
  }
}

static int by_cursor(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Two threads poll a pipe job (200 ms waits) while this one writes 20
 * lines, then kills it during their polls: every `got i` read exactly
 * once across both and the kill's final poll; both see it killed. */
static void test_concurrent_polls_a_write_and_a_kill(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  conch_job_options o = {0};
  o.stdin_pipe = true;
  uint32_t job = start_ok(sh, &o, "while read -r l; do echo got $l; done");
  struct pieces seen = {0};
  pthread_mutex_init(&seen.mu, NULL);
  seen.sh = sh;
  seen.job = job;
  struct racer racers[2] = {{&seen, "", 0}, {&seen, "", 0}};
  pthread_t threads[2];
  for (int i = 0; i < 2; i++) pthread_create(&threads[i], NULL, poll_loop, &racers[i]);

  char expected[512] = "";
  for (int i = 1; i <= 20; i++) {
    char line[16];
    snprintf(line, sizeof line, "%d\n", i);
    CHECK_RC(conch_shell_write(sh, job, (const uint8_t *)line, strlen(line)), CONCH_OK, "write a line");
    snprintf(expected + strlen(expected), sizeof expected - strlen(expected), "got %d\n", i);
  }
  /* Until the pollers read all 20 answers (within the hang guard). */
  double deadline = now_s() + HANG_GUARD;
  size_t bytes = 0;
  for (;;) {
    pthread_mutex_lock(&seen.mu);
    bytes = seen.bytes;
    pthread_mutex_unlock(&seen.mu);
    if (bytes >= strlen(expected) || now_s() > deadline) break;
    sleep_ms(10);
  }
  CHECK(bytes == strlen(expected), "the pollers read the answers (%zu of %zu bytes)", bytes, strlen(expected));
  /* The pollers are (almost always) inside their 200 ms waits now. */
  conch_job_poll *fin = NULL;
  double t0 = now_s();
  CHECK_RC(conch_shell_kill_job(sh, job, &fin), CONCH_OK, "kill during the polls");
  CHECK(now_s() - t0 < HANG_GUARD, "the kill returned (%.2f s)", now_s() - t0);
  for (int i = 0; i < 2; i++) join_or_die(threads[i], "a poller");
  for (int i = 0; i < 2; i++)
    CHECK(str_eq(racers[i].status, "killed"), "poller %d saw it killed (\"%s\" after %zu polls)", i,
          racers[i].status, racers[i].polls);
  CHECK(seen.errors == 0, "no poll failed or skipped (%zu)", seen.errors);
  if (fin) {
    CHECK_STR(fin->status, "killed", "the kill's final poll");
    keep(&seen, fin);
  }
  conch_job_poll_free(fin);

  /* The pieces in the order of their offsets: contiguous from 0, and
   * together exactly the 20 answers. */
  struct {
    uint64_t at;
    char *text;
  } sorted[MAX_PIECES];
  for (size_t i = 0; i < seen.n; i++) {
    sorted[i].at = seen.at[i];
    sorted[i].text = seen.text[i];
  }
  qsort(sorted, seen.n, sizeof sorted[0], by_cursor);
  char all[1024] = "";
  bool contiguous = true, overflow = false;
  for (size_t i = 0; i < seen.n; i++) {
    if (sorted[i].at != strlen(all)) contiguous = false;
    if (strlen(all) + strlen(sorted[i].text) >= sizeof all)
      overflow = true;
    else
      strcat(all, sorted[i].text);
    free(sorted[i].text);
  }
  CHECK(contiguous && !overflow, "each piece starts where the one before ended (%zu pieces)", seen.n);
  CHECK_STR(all, expected, "every answer read exactly once");
  pthread_mutex_destroy(&seen.mu);

  /* A poll racing the job's exit, five times. */
  for (int i = 0; i < 5; i++) {
    conch_job_options q = {0};
    uint32_t quick = start_ok(sh, &q, "echo a; echo b");
    conch_job_poll *p = poll_wait(sh, quick, LONG_WAIT_MS, NULL, "a poll racing the exit");
    if (p)
      CHECK(str_eq(p->output, "a\nb\n") && str_eq(p->status, "exited") && p->has_exit_code && p->exit_code == 0,
            "round %d: \"%s\", %s, exit %d", i, p->output, p->status, p->exit_code);
    conch_job_poll_free(p);
  }
  conch_shell_free(sh);
}

/* 5. A job's timeout kills its whole tree: a `setsid` escape and an
 * orphaned grandchild included. */
static void test_a_timeout_kills_the_whole_tree(void) {
  conch_shell *sh = new_shell();
  if (!sh) return;
  char escaped[32], inner[32], command[256];
  unique_sleep(escaped, sizeof escaped, 61);
  unique_sleep(inner, sizeof inner, 62);
  snprintf(command, sizeof command, "setsid /bin/sleep %s & (/bin/sleep %s &); /bin/sleep 63.1415", escaped, inner);
  conch_job_options o = {0};
  /* Long enough to see both sleeps start first (they take milliseconds). */
  o.timeout_ms = 2000;
  uint32_t job = start_ok(sh, &o, command);
  double deadline = now_s() + 1.8;
  while ((procs_with_arg(escaped) != 1 || procs_with_arg(inner) != 1) && now_s() < deadline) sleep_ms(10);
  SETUP(procs_with_arg(escaped) == 1 && procs_with_arg(inner) == 1, "both sleeps running before the timeout (%d, %d)",
        procs_with_arg(escaped), procs_with_arg(inner));
  double t0 = now_s();
  conch_job_poll *p = poll_wait(sh, job, LONG_WAIT_MS, NULL, "poll to the timeout");
  CHECK(now_s() - t0 < HANG_GUARD, "the timeout ended it (%.2f s)", now_s() - t0);
  if (p) {
    CHECK_STR(p->status, "timed_out", "status");
    CHECK(!p->has_exit_code, "no exit code for a timed out job");
  }
  conch_job_poll_free(p);
  CHECK(wait_procs(escaped, 0), "the setsid escape is gone (%d left)", procs_with_arg(escaped));
  CHECK(wait_procs(inner, 0), "the orphaned grandchild is gone (%d left)", procs_with_arg(inner));
  conch_shell_free(sh);
}

int main(void) {
  test_a_server_job();
  test_polls_read_each_line_once();
  test_yes_stays_bounded();
  test_concurrent_polls_a_write_and_a_kill();
  test_a_timeout_kills_the_whole_tree();
  return check_finish();
}
