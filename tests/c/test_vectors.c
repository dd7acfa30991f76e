/* Replays the shared vectors (tests/vectors/{normalize,intercept,sanitize,
 * artifact}.json) through the C API; keys.json is replayed by test_pty.c,
 * tool.json by test_tool.c, jobs.json by test_jobs.c and mask.json by test_mask.c. The case tables come from vectors_<name>.h,
 * generated from the JSON by tests/c/gen_vectors.py, which also fails when a
 * vector file is missing or neither replayed nor explained. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"

#include "cases.h"
#include "vectors_artifact.h"
#include "vectors_intercept.h"
#include "vectors_normalize.h"
#include "vectors_sanitize.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void normalize_vectors(void) {
  for (size_t i = 0; i < COUNT(NORMALIZE_CASES); i++) {
    const struct normalize_case *c = &NORMALIZE_CASES[i];
    if (c->fn == NORMALIZE) {
      int64_t head = -2, tail = -2;
      char *command = conch_normalize_bash_command(c->input, &head, &tail);
      CHECK_STR(command, c->expect, c->name);
      CHECK(head == c->expect_head && tail == c->expect_tail,
            "%s: expected head %lld tail %lld, got %lld %lld", c->name,
            (long long)c->expect_head, (long long)c->expect_tail, (long long)head,
            (long long)tail);
      conch_string_free(command);
    } else {
      char *text = conch_apply_head_tail(c->input, c->head, c->tail);
      CHECK_STR(text, c->expect, c->name);
      conch_string_free(text);
    }
  }
}

/* `command` checked against `rules_json` gives the case's expected
 * interception (or none). */
static void check_interception(const struct intercept_case *c, const char *rules_json) {
  conch_interception *hit = NULL;
  int rc = conch_check_bash_interception(c->command, c->tool_names, rules_json, &hit);
  if (!CHECK_RC(rc, CONCH_OK, c->name)) return;
  if (c->expect_message == NULL) {
    CHECK(hit == NULL, "%s: expected no interception, got \"%s\"", c->name, hit ? hit->message : "");
  } else if (CHECK(hit != NULL, "%s: expected an interception", c->name)) {
    CHECK_STR(hit->message, c->expect_message, c->name);
    CHECK_STR(hit->suggested_tool, c->expect_tool, c->name);
  }
  conch_interception_free(hit);
}

static void intercept_vectors(void) {
  for (size_t i = 0; i < COUNT(INTERCEPT_CASES); i++) {
    const struct intercept_case *c = &INTERCEPT_CASES[i];
    if (c->rule_errors[0] < 0) {
      check_interception(c, c->rules_json);
      continue;
    }
    /* The one-call API refuses a rule list with invalid rules, naming each
     * and no other... */
    conch_interception *hit = NULL;
    int rc = conch_check_bash_interception(c->command, c->tool_names, c->rules_json, &hit);
    CHECK_RC(rc, CONCH_ERR_INVALID_ARG, c->name);
    int errors = 0;
    for (const int *e = c->rule_errors; *e >= 0; e++, errors++) {
      char needle[64];
      snprintf(needle, sizeof needle, "interceptor rule %d ", *e);
      CHECK(strstr(conch_last_error(), needle) != NULL, "%s: the error names rule %d", c->name, *e);
    }
    int named = 0;
    for (const char *p = conch_last_error(); (p = strstr(p, "interceptor rule ")) != NULL; p++) named++;
    CHECK(named == errors, "%s: the error names %d rules, not %d: %s", c->name, errors, named,
          conch_last_error());
    CHECK(hit == NULL, "%s: no interception on error", c->name);
    /* ...and the valid rules alone do what the case expects of them. */
    check_interception(c, c->valid_rules_json);
  }
}

static void sanitize_vectors(void) {
  for (size_t i = 0; i < COUNT(SANITIZE_CASES); i++) {
    const struct sanitize_case *c = &SANITIZE_CASES[i];
    char *out = conch_sanitize_bytes((const uint8_t *)c->input, c->input_len);
    CHECK_STR(out, c->expect, c->name);
    conch_string_free(out);
    if (c->text_ok) {
      out = conch_sanitize_text(c->input);
      CHECK_STR(out, c->expect, c->name);
      conch_string_free(out);
    }
  }
}

/* A fresh scratch directory for one artifact case; `store` is a
 * subdirectory, created with the case's files unless the case has none. */
static void artifact_setup(const struct artifact_case *c, char *root, char *store, size_t n) {
  strcpy(root, "/tmp/conch-ctest-XXXXXX");
  if (mkdtemp(root) == NULL) {
    perror("mkdtemp");
    exit(2);
  }
  snprintf(store, n, "%s/store", root);
  if (!c->has_dir) return;
  mkdir(store, 0700);
  for (const struct artifact_file *f = c->files; f->name; f++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", store, f->name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, f->text, f->len) != (ssize_t)f->len) {
      perror(path);
      exit(2);
    }
    close(fd);
  }
}

/* Removes the case's scratch directory with everything in it: its files
 * and the ids an ALLOCATE case reserved. */
static void artifact_teardown(const char *root) { remove_tree(root); }

static void artifact_vectors(void) {
  for (size_t i = 0; i < COUNT(ARTIFACT_CASES); i++) {
    const struct artifact_case *c = &ARTIFACT_CASES[i];
    char root[64], dir[128];
    artifact_setup(c, root, dir, sizeof dir);
    conch_artifact_store *store = conch_artifact_store_new(dir);
    if (!CHECK(store != NULL, "%s: store", c->name)) continue;
    int rc = CONCH_OK;
    char *text = NULL;
    if (c->op == ALLOCATE) {
      size_t k = 0;
      for (; c->kinds[k] && rc == CONCH_OK; k++) {
        char *id = NULL, *path = NULL;
        rc = conch_artifact_store_allocate(store, c->kinds[k], &id, &path);
        if (rc != CONCH_OK) break;
        const char *base = strrchr(path, '/');
        CHECK(base && strncmp(path, dir, (size_t)(base - path)) == 0 &&
                  strlen(dir) == (size_t)(base - path),
              "%s: %s is in %s", c->name, path, dir);
        CHECK_STR(base ? base + 1 : path, c->expect_files[k], c->name);
        char expected_name[128];
        snprintf(expected_name, sizeof expected_name, "%s.%s.log", id, c->kinds[k]);
        CHECK_STR(base ? base + 1 : path, expected_name, c->name);
        conch_string_free(id);
        conch_string_free(path);
      }
    } else if (c->op == RESOLVE) {
      rc = conch_artifact_store_resolve(store, c->url, &text);
    } else {
      rc = conch_artifact_store_read(store, c->id, (size_t)c->offset, c->limit, &text);
    }
    CHECK_RC(rc, c->expect_status, c->name);
    if (c->expect_status != CONCH_OK) {
      CHECK_STR(conch_last_error(), c->expect_error, c->name);
      CHECK(text == NULL, "%s: no text on error", c->name);
    } else if (c->op != ALLOCATE) {
      CHECK_STR(text, c->expect, c->name);
    }
    conch_string_free(text);
    conch_artifact_store_free(store);
    artifact_teardown(root);
  }
}

int main(void) {
  normalize_vectors();
  intercept_vectors();
  sanitize_vectors();
  artifact_vectors();
  printf("vectors: %zu normalize, %zu intercept, %zu sanitize, %zu artifact cases\n",
         COUNT(NORMALIZE_CASES), COUNT(INTERCEPT_CASES), COUNT(SANITIZE_CASES),
         COUNT(ARTIFACT_CASES));
  return check_finish();
}
