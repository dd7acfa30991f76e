/* A model's tool loop in C, with a scripted model instead of an LLM API (no
 * network): the bash tool's definition is registered as conch gives it, each
 * tool call the model makes is handed to conch_tool_execute as the JSON the
 * model wrote, and the text conch returns is what goes back to the model,
 * whatever the outcome (success, a non-zero exit, a timeout).
 *
 * Build and run (scripts/test-c.sh does):
 *   cargo build -p conch-ffi
 *   cc -std=c11 -Iinclude examples/c/tool_loop.c -Ltarget/debug -lconch \
 *      -Wl,-rpath,$PWD/target/debug -o tool_loop && ./tool_loop
 */
#include <conch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The calls a model would make, turn by turn: the arguments are JSON the
 * model wrote against the definition's input_schema. */
static const char *const SCRIPT[] = {
    "{\"command\": \"echo hello from the model; pwd\", \"cwd\": \"/tmp\"}",
    "{\"command\": \"seq 1 100000 | grep 7\", \"tail\": 2}",
    "{\"command\": \"ls /nonexistent\"}",
    "{\"command\": \"/bin/sleep 30\", \"timeout\": 1}",
};

/* Live updates: a host would redraw its view of the call. */
static void on_update(void *user, const char *utf8, size_t len) {
  (void)utf8;
  *(size_t *)user = len;
}

int main(void) {
  conch_tool_options opts = {0};
  opts.session_key = "tool-loop-example"; /* one shell per conversation */
  conch_tool *tool = conch_tool_new(&opts);
  if (!tool) {
    fprintf(stderr, "conch_tool_new: %s\n", conch_last_error());
    return 1;
  }

  /* 1. Register the tool with the LLM API as conch describes it. */
  char *definition = conch_tool_definition(tool);
  if (!definition || !strstr(definition, "\"input_schema\"")) {
    fprintf(stderr, "no definition: %s\n", conch_last_error());
    return 1;
  }
  printf("request: {\"tools\": [%s], \"messages\": [...]}\n\n", definition);
  conch_string_free(definition);

  /* 2. Each tool call of the model, dispatched; the text goes back. */
  int failures = 0;
  for (size_t i = 0; i < sizeof SCRIPT / sizeof *SCRIPT; i++) {
    size_t last_update = 0;
    conch_tool_result *r = NULL;
    int rc = conch_tool_execute(tool, SCRIPT[i], NULL, false, on_update, &last_update, &r);
    if (!r) {
      fprintf(stderr, "call %zu not run (%d): %s\n", i, rc, conch_last_error());
      failures++;
      continue;
    }
    printf("tool_use: %s\n", SCRIPT[i]);
    printf("tool_result (%s): %s\n\n", rc == CONCH_OK ? "ok" : "is_error", r->text);
    conch_tool_result_free(r);
  }
  conch_tool_free(tool);
  conch_close_sessions(NULL);
  return failures == 0 ? 0 : 1;
}
