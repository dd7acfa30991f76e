/* Collects streamed chunks for the C tests, checking the callback contract
 * (calling thread, NUL after the text) as they arrive, and lets a second
 * thread wait until the command printed a marker. */
#ifndef CONCH_TEST_CHUNKS_H
#define CONCH_TEST_CHUNKS_H

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "check.h"

struct chunks {
  char text[1 << 16];
  size_t len;
  int calls;
  bool wrong_thread, not_terminated;
  pthread_t owner;
  /* `started` is set once the text contains `marker` (NULL: at the first
   * chunk), so a second thread can act on a command that is running. */
  const char *marker;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool started;
};

/* Call on the thread that will run the command. */
static void chunks_init(struct chunks *c, const char *marker) {
  memset(c, 0, sizeof *c);
  c->owner = pthread_self();
  c->marker = marker;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
}

static void chunks_destroy(struct chunks *c) {
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
}

static void on_chunk(void *user, const char *utf8, size_t len) {
  struct chunks *c = user;
  c->calls++;
  if (!pthread_equal(pthread_self(), c->owner)) c->wrong_thread = true;
  if (utf8[len] != '\0') c->not_terminated = true;
  if (c->len + len < sizeof c->text) {
    memcpy(c->text + c->len, utf8, len);
    c->len += len;
    c->text[c->len] = '\0';
  }
  if (c->marker == NULL || strstr(c->text, c->marker) != NULL) {
    pthread_mutex_lock(&c->mu);
    c->started = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
  }
}

/* Waits (at most 30 s, so a broken command cannot hang the suite) until
 * the marker was seen; false on timeout. */
static inline bool wait_started(struct chunks *c) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 30;
  pthread_mutex_lock(&c->mu);
  int rc = 0;
  while (!c->started && rc == 0) rc = pthread_cond_timedwait(&c->cv, &c->mu, &deadline);
  bool started = c->started;
  pthread_mutex_unlock(&c->mu);
  return started;
}

/* Runs `o` through conch_execute_shell with its output streamed to a
 * `struct chunks`, and checks that the result's output and the streamed text
 * are both `expect` (`what` names the run in a failure). Returns the result
 * for more checks (the caller frees it); NULL when the call failed. */
static inline conch_bash_result *execute_streamed(const conch_execute_options *o, const char *what,
                                                  const char *expect) {
  struct chunks seen;
  chunks_init(&seen, NULL);
  conch_bash_result *r = NULL;
  if (CHECK_RC(conch_execute_shell(o, on_chunk, &seen, &r), CONCH_OK, what)) {
    CHECK_STR(r->output, expect, what);
    CHECK_STR(seen.text, expect, what);
  }
  chunks_destroy(&seen);
  return r;
}

#endif
