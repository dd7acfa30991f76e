/* The shapes of the shared test vectors (the JSON files in tests/vectors) as C
 * structs; tests/c/gen_vectors.py fills tables of them (vectors_<name>.h). */
#ifndef CONCH_TEST_CASES_H
#define CONCH_TEST_CASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conch.h"

struct normalize_case {
  const char *name;
  enum { NORMALIZE, APPLY_HEAD_TAIL } fn;
  const char *input; /* the command, or the text */
  const char *expect;
  int64_t expect_head, expect_tail; /* NORMALIZE: -1 none */
  int64_t head, tail;               /* APPLY_HEAD_TAIL: -1 none */
};

struct intercept_case {
  const char *name, *command;
  const char *const *tool_names;
  const char *rules_json;  /* NULL: the default rules */
  const int *rule_errors;  /* indexes of invalid rules, ended by -1 */
  const char *valid_rules_json; /* with rule errors: the rules without the invalid ones */
  const char *expect_message, *expect_tool; /* NULL: not blocked */
};

struct sanitize_case {
  const char *name, *input;
  size_t input_len;
  bool text_ok; /* the input is a C string (valid UTF-8, no NUL) */
  const char *expect;
};

struct artifact_file {
  const char *name, *text;
  size_t len;
};

struct artifact_case {
  const char *name;
  bool has_dir;
  const struct artifact_file *files;
  enum { ALLOCATE, RESOLVE, READ } op;
  const char *const *kinds;
  const char *url, *id;
  int64_t offset, limit;
  const char *const *expect_files; /* ALLOCATE */
  const char *expect;              /* RESOLVE, READ */
  int expect_status;
  const char *expect_error;
};

struct key_case {
  const char *name;
  bool is_key;       /* `input` is a key name for conch_pty_write_key */
  const char *input; /* otherwise raw input for conch_pty_write */
  size_t input_len;
  bool app_cursor;
  const char *expect; /* the bytes the terminal receives; NULL on error */
  size_t expect_len;
  const char *error_prefix; /* the error message starts with it */
};

struct tool_case {
  const char *name;
  /* The tool's configuration. */
  bool interceptor;
  const char *const *tool_names; /* NULL: none */
  const char *rules_json;        /* NULL: the default rules */
  bool artifacts;                /* a fresh artifacts directory */
  const char *args_json;         /* the model's arguments */
  int expect_status;             /* CONCH_OK or the tool's outcome code */
  /* The text exactly, or its start and/or end; "{cwd}" is the tool's cwd. */
  const char *text, *text_starts_with, *text_ends_with;
  int truncated; /* 1: details_json carries truncation, 0: no details, -1: unchecked */
  const char *suggested_tool;
};

/* tool_definition.json: the bash tool's definition for a configuration,
 * as conch_tool_definition's JSON text (compact, keys sorted). */
struct tool_definition_case {
  const char *name;
  bool interceptor;
  const char *const *tool_names; /* NULL: none */
  const char *rules_json;        /* NULL: the default rules */
  const char *tool_name, *job_tool_name; /* NULL: the defaults */
  bool virtual_terminal;
  const char *expect_json;
};

/* jobs.json: runs, then polls of the job they left (or of `job`), then the
 * listing. In the tables, each array ends with a zeroed entry. */
struct job_run {
  const char *command, *output;
};

struct job_poll_case {
  const char *what; /* "<case>: poll <i>"; NULL ends the array */
  int64_t job;      /* -1: the last job conch_shell_jobs lists */
  /* The options, as conch_poll_options takes them. */
  uint64_t wait_ms;
  const char *until; /* NULL: none */
  size_t max_bytes;  /* 0: the shell's */
  int64_t cursor;    /* -1: none */
  const char *error; /* a substring of the message; NULL: the poll succeeds */
  /* The expected fields; NULL / -1 / UNCHECKED: not compared. */
  const char *output, *status;
  enum { EXIT_UNCHECKED, EXIT_NONE, EXIT_IS } exit;
  int32_t exit_code;
  int64_t cursor_at, next_cursor, total_bytes, omitted_bytes;
};

struct job_listed {
  const char *command; /* NULL ends the array */
  const char *status;  /* NULL: not compared */
  int64_t total_bytes; /* -1: not compared */
};

struct jobs_case {
  const char *name;
  const struct job_run *runs;         /* ends with command NULL */
  const struct job_poll_case *polls;  /* ends with what NULL */
  bool check_jobs;                    /* the case gives the listing */
  const struct job_listed *jobs;      /* ends with command NULL */
};

/* job_steps.json: jobs step by step on one shell per case. In the tables,
 * each array of steps ends with a zeroed entry (`what` NULL). */
struct step_expect {
  const char *output, *status, *command; /* NULL: not compared */
  int exit;                              /* EXIT_UNCHECKED, EXIT_NONE, EXIT_IS */
  int32_t exit_code;
  int64_t cursor, next_cursor, total_bytes, omitted_bytes; /* -1: not compared */
  int64_t backgrounded;                  /* -2: not compared, -1: none */
};

struct job_step {
  const char *what; /* "<case>: step <i> (<op>)"; NULL ends the array */
  enum {
    STEP_RUN,
    STEP_START,
    STEP_POLL,
    STEP_WRITE,
    STEP_CLOSE_STDIN,
    STEP_KEY,
    STEP_SIGNAL,
    STEP_KILL,
    STEP_JOBS,
    STEP_WAIT_ANY
  } op;
  int64_t job; /* -1: the job the last start, or the last backgrounded run, made */
  /* run and start */
  const char *command;
  uint64_t yield_after_ms; /* run; 0: none */
  const char *cwd;         /* start; NULL: none */
  const char *const *env;  /* start; "KEY=VALUE", NULL-terminated; NULL: none */
  uint64_t timeout_ms;     /* start; wait_any */
  bool stdin_pipe;
  uint16_t pty_cols, pty_rows; /* 0, 0: no terminal */
  /* poll */
  uint64_t wait_ms;
  const char *until;
  size_t max_bytes;
  int64_t cursor; /* -1: none */
  /* write, key, signal */
  const char *data;
  size_t data_len;
  const char *key, *signal;
  /* wait_any: the jobs, or (NULL) the current one */
  const uint32_t *wait_jobs;
  size_t wait_count;
  /* The outcome: a status (CONCH_OK, or the code of the error's kind). */
  int status;
  const char *error_kind; /* the vector's name of the kind; NULL: none */
  bool has_expect;
  struct step_expect expect; /* run, poll, kill */
  int64_t expect_waited;     /* wait_any: -1 none (null), else the id */
  const struct step_expect *expect_jobs; /* jobs */
  size_t expect_jobs_count;
};

struct job_steps_case {
  const char *name;
  size_t max_jobs; /* 0: the default */
  const struct job_step *steps;
};

/* sandbox_options.json: a policy as conch_sandbox (the cases it can hold;
 * the generator says which it leaves out), and the exact error, if any. */
struct sandbox_case {
  const char *name;
  bool no_sandbox; /* the vector's false: opts.sandbox stays NULL */
  conch_sandbox sandbox;
  const char *expect_error; /* NULL: accepted */
};

/* mask.json: a command run with `env` (conch_execute_shell), masked as the
 * case says, and the exact output; `commands` is the case's command, then
 * the same output written cut at each byte of a value. */
struct mask_case {
  const char *name;
  const char *const *env;        /* "KEY=VALUE", ended by NULL */
  bool skip_mask;                /* mask: false */
  const char *const *mask_names; /* mask: a list of names; NULL: none */
  const char *options_json;      /* mask: true, given as JSON; NULL: not given */
  const char *const *commands;   /* ended by NULL */
  const char *expect;
};

/* carriage_return.json: the input written by each command (whole, then cut
 * in two at each byte), run with `options_json` ({"carriage_return": …}). */
struct carriage_case {
  const char *name;
  const char *options_json;
  const char *const *commands;   /* ended by NULL */
  const char *expect;
};

#endif
