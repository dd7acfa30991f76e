/* The PTY session through the C API: runs, raw chunks, the screen, input
 * and keys from a second thread, resize, kill, timeout, start failures; and
 * the shared key vectors (tests/vectors/keys.json) replayed through a real
 * terminal: every input is written with conch_pty_write / _write_key to a
 * raw-mode terminal whose program dumps the bytes it receives. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "chunks.h"
#include "vectors_keys.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* What the second thread does once the command printed READY. */
typedef void (*action_fn)(conch_pty *pty, void *arg);

struct driver {
  conch_pty *pty;
  struct chunks *chunks;
  action_fn act;
  void *arg;
  bool started;
};

static void *drive(void *p) {
  struct driver *d = p;
  d->started = wait_started(d->chunks);
  if (d->started) d->act(d->pty, d->arg);
  return NULL;
}

/* Starts `command` on `pty`, running `act` from a second thread once READY
 * was printed. Returns the status; `*out` the result. */
static int run_driven(conch_pty *pty, conch_pty_options *o, action_fn act, void *arg,
                      struct chunks *c, conch_pty_result **out) {
  chunks_init(c, "READY");
  struct driver d = {pty, c, act, arg, false};
  pthread_t t;
  pthread_create(&t, NULL, drive, &d);
  if (o->timeout_ms == 0) o->timeout_ms = 20000; /* a safety net against hangs */
  int rc = conch_pty_start(pty, o, on_chunk, c, out);
  pthread_join(t, NULL);
  CHECK(d.started, "%s: the command printed READY", o->command);
  return rc;
}

static void test_run_and_screen(conch_pty *pty) {
  conch_pty_options o = {0};
  o.command = "printf 'hello\\n\\033[31mred\\033[0m\\n'; exit 3";
  struct chunks c;
  chunks_init(&c, NULL);
  conch_pty_result *r = NULL;
  if (CHECK_RC(conch_pty_start(pty, &o, on_chunk, &c, &r), CONCH_OK, "conch_pty_start")) {
    CHECK(r->has_exit_code && r->exit_code == 3, "exit 3, got %d", r->exit_code);
    CHECK(!r->cancelled && !r->timed_out, "not stopped");
    CHECK_STR(r->output, "hello\nred\n", "sanitized output for the model");
    CHECK(r->total_lines == 2, "two lines");
    CHECK(strstr(c.text, "hello\r\n") != NULL && strstr(c.text, "\033[31m") != NULL,
          "chunks are raw terminal text");
    CHECK(!c.wrong_thread && !c.not_terminated, "callbacks on the calling thread, NUL-terminated");
  }
  conch_pty_result_free(r);
  char *screen = conch_pty_screen_text(pty);
  CHECK(screen != NULL && strncmp(screen, "hello\nred", 9) == 0, "the screen shows the run: \"%s\"",
        screen ? screen : "(null)");
  conch_string_free(screen);
  chunks_destroy(&c);
}

static void write_abc(conch_pty *pty, void *arg) {
  (void)arg;
  CHECK_RC(conch_pty_write(pty, (const uint8_t *)"abc", 3), CONCH_OK, "conch_pty_write");
  CHECK_RC(conch_pty_write_key(pty, "enter"), CONCH_OK, "conch_pty_write_key enter");
}

static void key_ctrl_c(conch_pty *pty, void *arg) {
  (void)arg;
  bool running = false;
  CHECK_RC(conch_pty_is_running(pty, &running), CONCH_OK, "conch_pty_is_running");
  CHECK(running, "running while the command runs");
  CHECK_RC(conch_pty_write_key(pty, "ctrl+c"), CONCH_OK, "ctrl+c");
}

static void resize_then_enter(conch_pty *pty, void *arg) {
  (void)arg;
  CHECK_RC(conch_pty_resize(pty, 100, 30), CONCH_OK, "conch_pty_resize");
  CHECK_RC(conch_pty_write_key(pty, "enter"), CONCH_OK, "enter after resize");
}

static void kill_it(conch_pty *pty, void *arg) {
  (void)arg;
  CHECK_RC(conch_pty_kill(pty), CONCH_OK, "conch_pty_kill");
}

static void test_input(conch_pty *pty) {
  struct chunks c;
  conch_pty_options o = {0};
  conch_pty_result *r = NULL;

  o.command = "printf READY; read -r line; echo \"got:$line\"";
  if (CHECK_RC(run_driven(pty, &o, write_abc, NULL, &c, &r), CONCH_OK, "write"))
    CHECK(strstr(r->output, "got:abc\n") != NULL, "the command read the input: \"%s\"", r->output);
  conch_pty_result_free(r);
  chunks_destroy(&c);

  o.command = "printf READY; sleep 100";
  r = NULL;
  if (CHECK_RC(run_driven(pty, &o, key_ctrl_c, NULL, &c, &r), CONCH_OK, "ctrl+c"))
    CHECK(r->has_exit_code && r->exit_code == 130 && !r->cancelled,
          "ctrl+c interrupts the command (exit 130), got %d", r->exit_code);
  conch_pty_result_free(r);
  chunks_destroy(&c);

  o.command = "printf READY; read -r x; stty size";
  o.cols = 80;
  o.rows = 24;
  r = NULL;
  if (CHECK_RC(run_driven(pty, &o, resize_then_enter, NULL, &c, &r), CONCH_OK, "resize"))
    CHECK(strstr(r->output, "30 100") != NULL, "the command sees the new size: \"%s\"", r->output);
  conch_pty_result_free(r);
  chunks_destroy(&c);
  o.cols = o.rows = 0;

  o.command = "printf READY; sleep 100";
  r = NULL;
  if (CHECK_RC(run_driven(pty, &o, kill_it, NULL, &c, &r), CONCH_OK, "kill"))
    CHECK(r->cancelled && !r->timed_out, "conch_pty_kill cancels the run");
  conch_pty_result_free(r);
  chunks_destroy(&c);

  /* Only the flags are asserted, which hold however far the command got
   * when the deadline came; the sleep outlasts it by far. */
  o.command = "sleep 100";
  o.timeout_ms = 1000;
  r = NULL;
  if (CHECK_RC(conch_pty_start(pty, &o, NULL, NULL, &r), CONCH_OK, "timeout"))
    CHECK(r->timed_out && r->cancelled && !r->has_exit_code,
          "the timeout stops the run (cancelled too, as a shell run; no exit code)");
  if (r != NULL)
    CHECK(strncmp(r->output, "[Command timed out after 1 seconds]\n", 36) == 0,
          "the notice comes first: \"%s\"", r->output);
  conch_pty_result_free(r);
}

static void test_errors(conch_pty *pty) {
  bool running = true;
  CHECK_RC(conch_pty_is_running(pty, &running), CONCH_OK, "conch_pty_is_running");
  CHECK(!running, "idle between runs");
  CHECK_RC(conch_pty_write(pty, (const uint8_t *)"x", 1), CONCH_ERR_INVALID_ARG, "write when idle");
  CHECK_STR(conch_last_error(), "PTY session is not running", "its message");
  CHECK_RC(conch_pty_kill(pty), CONCH_ERR_INVALID_ARG, "kill when idle");
  CHECK_RC(conch_pty_resize(pty, 80, 24), CONCH_ERR_INVALID_ARG, "resize when idle");

  /* Bad input is an error of the call, worded as the shell engine words it. */
  conch_pty_options o = {0};
  o.command = "true";
  o.cwd = "/nonexistent-conch-dir";
  conch_pty_result *r = NULL;
  CHECK_RC(conch_pty_start(pty, &o, NULL, NULL, &r), CONCH_ERR_INVALID_ARG, "a missing cwd");
  CHECK_STR(conch_last_error(), "Working directory does not exist: /nonexistent-conch-dir",
            "its message");
  CHECK(r == NULL, "out untouched");
}

/* The keys vectors through a real terminal: the program puts the terminal
 * in raw mode (every byte passes unchanged), optionally turns on
 * application cursor keys, then dumps in hex the bytes it receives, up to
 * the expected count. After the cases comes END_MARK: the dump must end
 * with it exactly, so a case that sends more bytes than expected shifts it
 * and fails (and one that sends fewer leaves the dump waiting, until the
 * run's hang guard). */
#define END_MARK "<end of the key vectors>"

struct key_batch {
  bool app_cursor;
  unsigned char *expected; /* every case's bytes, then END_MARK */
  size_t total;
};

static void send_keys(conch_pty *pty, void *arg) {
  const struct key_batch *b = arg;
  for (size_t i = 0; i < COUNT(KEY_CASES); i++) {
    const struct key_case *k = &KEY_CASES[i];
    if (k->expect == NULL || k->app_cursor != b->app_cursor) continue;
    int rc = k->is_key ? conch_pty_write_key(pty, k->input)
                       : conch_pty_write(pty, (const uint8_t *)k->input, k->input_len);
    CHECK_RC(rc, CONCH_OK, k->name);
  }
  CHECK_RC(conch_pty_write(pty, (const uint8_t *)END_MARK, strlen(END_MARK)), CONCH_OK, "the end mark");
}

/* The hex bytes od printed after READY, decoded into `out` (room for `cap`
 * bytes); returns how many there were, even past `cap`. */
static size_t decode_dump(const char *text, unsigned char *out, size_t cap) {
  const char *p = strstr(text, "READY");
  size_t n = 0;
  if (p == NULL) return 0;
  p += 5;
  unsigned int byte;
  int used;
  while (sscanf(p, " %2x%n", &byte, &used) == 1) {
    if (n < cap) out[n] = (unsigned char)byte;
    n++;
    p += used;
  }
  return n;
}

static void replay_keys(conch_pty *pty, bool app_cursor) {
  /* The expected bytes, in a buffer as large as the cases need. */
  size_t cap = strlen(END_MARK);
  for (size_t i = 0; i < COUNT(KEY_CASES); i++)
    if (KEY_CASES[i].expect != NULL && KEY_CASES[i].app_cursor == app_cursor) cap += KEY_CASES[i].expect_len;
  struct key_batch b = {app_cursor, malloc(cap), 0};
  unsigned char *got = malloc(cap);
  if (!SETUP(b.expected != NULL && got != NULL, "memory for %zu bytes", cap)) {
    free(b.expected);
    free(got);
    return;
  }
  size_t cases = 0;
  for (size_t i = 0; i < COUNT(KEY_CASES); i++) {
    const struct key_case *k = &KEY_CASES[i];
    if (k->expect == NULL || k->app_cursor != app_cursor) continue;
    memcpy(b.expected + b.total, k->expect, k->expect_len);
    b.total += k->expect_len;
    cases++;
  }
  memcpy(b.expected + b.total, END_MARK, strlen(END_MARK));
  b.total += strlen(END_MARK);

  char command[256];
  snprintf(command, sizeof command,
           "stty raw -echo -iexten; %s printf READY; head -c %zu | od -An -v -tx1",
           app_cursor ? "printf '\\033[?1h';" : "", b.total);
  conch_pty_options o = {0};
  o.command = command;
  /* The dump is three characters per byte: keep all of it, however many
   * cases there are. */
  o.max_bytes = 4 * b.total + 4096;
  struct chunks c;
  conch_pty_result *r = NULL;
  if (CHECK_RC(run_driven(pty, &o, send_keys, &b, &c, &r), CONCH_OK, command)) {
    CHECK(!r->truncated && !r->timed_out, "the whole dump arrived (truncated %d, timed out %d)", r->truncated,
          r->timed_out);
    size_t n = decode_dump(r->output, got, cap);
    printf("key vectors, application cursor %s: %zu cases, %zu bytes through the terminal\n",
           app_cursor ? "on" : "off", cases, n);
    bool same = n == b.total && memcmp(got, b.expected, n) == 0;
    if (!CHECK(same, "key vectors (app_cursor %d): the terminal received %zu bytes, expected %zu",
               app_cursor, n, b.total)) {
      /* Name the first case whose bytes differ. */
      size_t at = 0, shown = n < cap ? n : cap;
      while (at < shown && at < b.total && got[at] == b.expected[at]) at++;
      const char *where = "the end mark";
      for (size_t i = 0, off = 0; i < COUNT(KEY_CASES); i++) {
        const struct key_case *k = &KEY_CASES[i];
        if (k->expect == NULL || k->app_cursor != app_cursor) continue;
        if (at < off + k->expect_len) {
          where = k->name;
          break;
        }
        off += k->expect_len;
      }
      fprintf(stderr, "  first difference at byte %zu, in \"%s\"\n", at, where);
    }
  }
  conch_pty_result_free(r);
  chunks_destroy(&c);
  free(b.expected);
  free(got);
}

static void test_key_vectors(conch_pty *pty) {
  replay_keys(pty, false);
  replay_keys(pty, true);
  /* Bad key names fail before anything is sent (no command needed). */
  for (size_t i = 0; i < COUNT(KEY_CASES); i++) {
    const struct key_case *k = &KEY_CASES[i];
    if (k->error_prefix == NULL) continue;
    CHECK_RC(conch_pty_write_key(pty, k->input), CONCH_ERR_INVALID_ARG, k->name);
    CHECK(strncmp(conch_last_error(), k->error_prefix, strlen(k->error_prefix)) == 0,
          "%s: message starts with \"%s\"", k->name, k->error_prefix);
  }
}

struct free_job {
  conch_pty *pty;
  struct chunks *chunks;
};

static void *free_when_started(void *arg) {
  struct free_job *job = arg;
  if (!wait_started(job->chunks)) fprintf(stderr, "the command did not start; freeing anyway\n");
  conch_pty_free(job->pty);
  return NULL;
}

static void test_free_while_running(void) {
  conch_pty *pty = conch_pty_new();
  if (!CHECK(pty != NULL, "conch_pty_new")) return;
  struct chunks c;
  chunks_init(&c, "READY");
  struct free_job job = {pty, &c};
  pthread_t t;
  pthread_create(&t, NULL, free_when_started, &job);
  conch_pty_options o = {0};
  o.command = "printf READY; sleep 100";
  o.timeout_ms = 20000;
  conch_pty_result *r = NULL;
  if (CHECK_RC(conch_pty_start(pty, &o, on_chunk, &c, &r), CONCH_OK, "run stopped by free"))
    CHECK(r->cancelled, "conch_pty_free from another thread kills the run");
  pthread_join(t, NULL);
  conch_pty_result_free(r);
  chunks_destroy(&c);
}

int main(void) {
  conch_pty *pty = conch_pty_new();
  if (!CHECK(pty != NULL, "conch_pty_new")) return check_finish();
  test_run_and_screen(pty);
  test_input(pty);
  test_errors(pty);
  test_key_vectors(pty);
  conch_pty_free(pty);
  test_free_while_running();
  return check_finish();
}
