/* The loop a session's bash runs, through the C API: conch_shell_engine
 * writes the one the `engine` option (options_json) chose, or the default
 * one (CONCH_ENGINE, else the builtin), for a local shell and for one on a
 * `conch serve` (CONCH_BIN); the two loops word a syntax error as
 * documented; a bad engine is refused with the words it takes. Real bash,
 * real server. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* The loop a session runs when nothing chooses it: CONCH_ENGINE (the test
 * command runs every suite once with `eval`), else the builtin. */
static conch_engine expected_default(void) {
  const char *e = getenv("CONCH_ENGINE");
  return e != NULL && strcmp(e, "eval") == 0 ? CONCH_ENGINE_EVAL : CONCH_ENGINE_BUILTIN;
}

static const char *name_of(conch_engine engine) {
  return engine == CONCH_ENGINE_BUILTIN ? "builtin" : "eval";
}

/* How each loop words a syntax error: the builtin runs a command as
 * `bash -c` input, the eval loop through `eval`. */
static const char *syntax_error_of(conch_engine engine) {
  return engine == CONCH_ENGINE_BUILTIN ? "bash: -c: line 1: syntax error"
                                        : "bash: eval: line 1: syntax error";
}

/* `sh` runs `engine`: conch_shell_engine says so, twice (the second answer
 * is the one known), and a syntax error is worded as that loop words it. */
static void check_engine(conch_shell *sh, conch_engine engine, const char *what) {
  conch_engine got = engine == CONCH_ENGINE_BUILTIN ? CONCH_ENGINE_EVAL : CONCH_ENGINE_BUILTIN;
  if (CHECK_RC(conch_shell_engine(sh, &got), CONCH_OK, what))
    CHECK_STR(name_of(got), name_of(engine), what);
  conch_run_options o = {0};
  o.command = "if then";
  conch_bash_result *r = NULL;
  if (CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_OK, what)) {
    const char *want = syntax_error_of(engine);
    CHECK(strncmp(r->output, want, strlen(want)) == 0, "%s: output starts with \"%s\", got \"%s\"",
          what, want, r->output);
  }
  conch_bash_result_free(r);
  got = engine == CONCH_ENGINE_BUILTIN ? CONCH_ENGINE_EVAL : CONCH_ENGINE_BUILTIN;
  if (CHECK_RC(conch_shell_engine(sh, &got), CONCH_OK, what))
    CHECK(got == engine, "%s: still %s after a run", what, name_of(engine));
}

static conch_shell *local_shell(const char *json) {
  conch_shell_options o = {0};
  o.snapshot = "none";
  o.options_json = json;
  return conch_shell_new(&o);
}

static void test_a_local_shell_runs_the_chosen_loop(void) {
  conch_shell *sh = local_shell(NULL);
  if (CHECK(sh != NULL, "a shell with the defaults"))
    check_engine(sh, expected_default(), "default");
  conch_shell_free(sh);
  sh = local_shell("{\"engine\": \"auto\"}");
  if (CHECK(sh != NULL, "engine auto"))
    check_engine(sh, expected_default(), "auto");
  conch_shell_free(sh);
  sh = local_shell("{\"engine\": \"builtin\"}");
  if (CHECK(sh != NULL, "engine builtin"))
    check_engine(sh, CONCH_ENGINE_BUILTIN, "builtin");
  conch_shell_free(sh);
  sh = local_shell("{\"engine\": \"eval\"}");
  if (CHECK(sh != NULL, "engine eval"))
    check_engine(sh, CONCH_ENGINE_EVAL, "eval");
  conch_shell_free(sh);
}

static void test_a_bad_engine_is_refused(void) {
  conch_shell *sh = local_shell("{\"engine\": \"bash\"}");
  CHECK(sh == NULL, "engine \"bash\" refused");
  CHECK_STR(conch_last_error(),
            "conch_shell_new: opts->options_json: unknown variant `bash`, expected one of `auto`, "
            "`builtin`, `eval`",
            "the word refused, and the words taken");
  conch_shell_free(sh);
}

static void test_a_remote_shell_tells_its_loop(void) {
  const char *bin = getenv("CONCH_BIN");
  const char *argv[] = {bin != NULL ? bin : "conch", "serve", "--stdio", NULL};
  conch_remote *remote = NULL;
  if (!CHECK_RC(conch_remote_connect_command(argv, &remote), CONCH_OK, "connect over stdio"))
    return;
  const char *options[] = {"{\"snapshot\": \"none\"}",
                           "{\"snapshot\": \"none\", \"engine\": \"builtin\"}",
                           "{\"snapshot\": \"none\", \"engine\": \"eval\"}"};
  conch_engine expected[] = {expected_default(), CONCH_ENGINE_BUILTIN, CONCH_ENGINE_EVAL};
  for (size_t i = 0; i < 3; i++) {
    conch_shell_options o = {0};
    o.options_json = options[i];
    conch_shell *sh = NULL;
    if (CHECK_RC(conch_remote_shell(remote, &o, &sh), CONCH_OK, options[i]))
      check_engine(sh, expected[i], options[i]);
    conch_shell_free(sh);
  }
  conch_remote_free(remote);
}

/* The bash tool takes the option too (conch_tool_options.engine): its
 * session runs that loop, so a syntax error reads as that loop words it. */
static void test_a_tool_runs_the_chosen_loop(void) {
  const char *engines[] = {"builtin", "eval"};
  conch_engine expected[] = {CONCH_ENGINE_BUILTIN, CONCH_ENGINE_EVAL};
  for (size_t i = 0; i < 2; i++) {
    char key[32];
    snprintf(key, sizeof key, "test_engine %s", engines[i]);
    conch_tool_options o = {0};
    o.snapshot = "none";
    o.engine = engines[i];
    o.session_key = key;
    conch_tool *t = conch_tool_new(&o);
    if (!CHECK(t != NULL, "a tool with engine %s", engines[i])) continue;
    conch_tool_result *r = NULL;
    conch_tool_execute(t, "{\"command\": \"if then\"}", NULL, false, NULL, NULL, &r);
    const char *want = syntax_error_of(expected[i]);
    if (CHECK(r != NULL, "the tool's result, engine %s", engines[i]))
      CHECK(strstr(r->text, want) != NULL, "engine %s: \"%s\" in \"%s\"", engines[i], want, r->text);
    conch_tool_result_free(r);
    conch_tool_free(t);
  }
  conch_tool_options o = {0};
  o.engine = "bash";
  conch_tool *t = conch_tool_new(&o);
  CHECK(t == NULL, "engine \"bash\" refused");
  CHECK(strstr(conch_last_error(), "opts->engine") != NULL, "the error names the field: %s",
        conch_last_error());
  conch_tool_free(t);
}

int main(void) {
  test_a_local_shell_runs_the_chosen_loop();
  test_a_bad_engine_is_refused();
  test_a_tool_runs_the_chosen_loop();
  test_a_remote_shell_tells_its_loop();
  return check_finish();
}
