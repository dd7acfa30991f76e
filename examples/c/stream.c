/* Runs commands in a persistent bash with conch, streaming their output.
 *
 * Build (from the repository root, after `cargo build -p conch-ffi`):
 *   cc -std=c11 -Iinclude examples/c/stream.c -Ltarget/debug -lconch \
 *      -Wl,-rpath,$PWD/target/debug -o stream && ./stream
 * or, with the installed library: cc stream.c $(pkg-config --cflags --libs conch)
 */
#include <stdio.h>

#include "conch.h"

static void print_chunk(void *user, const char *utf8, size_t len) {
  (void)user;
  fwrite(utf8, 1, len, stdout); /* live output, as it arrives */
}

int main(void) {
  conch_shell_options opts = {0}; /* zero = defaults: bash from PATH, host cwd */
  conch_shell *sh = conch_shell_new(&opts);
  if (sh == NULL) {
    fprintf(stderr, "conch_shell_new: %s\n", conch_last_error());
    return 1;
  }
  const char *commands[] = {"cd /tmp && export GREETING=hello", "echo $GREETING from $PWD",
                            "ls /nonexistent", "sleep 5", NULL};
  for (int i = 0; commands[i] != NULL; i++) {
    conch_run_options run = {0};
    run.command = commands[i];
    run.timeout_ms = 1000; /* the process tree is killed after 1 s */
    conch_bash_result *r = NULL;
    if (conch_shell_run(sh, &run, print_chunk, NULL, &r) != CONCH_OK) {
      fprintf(stderr, "conch_shell_run: %s\n", conch_last_error());
      break;
    }
    if (r->has_exit_code) printf("$ %s -> exit %d\n", commands[i], r->exit_code);
    else printf("$ %s -> %s\n", commands[i], r->output); /* "[Command timed out …]" */
    conch_bash_result_free(r);
  }
  conch_shell_free(sh); /* kills whatever the session still runs */
  return 0;
}
