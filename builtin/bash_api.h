/* SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The part of bash's internal interface conch_loop.c uses, declared as
 * bash 5.1, 5.2 and 5.3 declare it (builtins.h, builtins/common.h, shell.h,
 * sig.h, jobs.h, flags.h, execute_cmd.h, variables.h, trap.h of each
 * release): every declaration below reads the same in all three, so one
 * copy serves them, and conch_loop's load function refuses any other
 * version (BASH_API_VERSIONS). A bash of another version may lay out or
 * name these differently; the guard keeps this builtin out of it, and
 * conch runs its eval loop there instead.
 *
 * Vendored rather than taken from a bash-builtins package: the build needs
 * no headers installed, and the versions it supports are the ones checked
 * here. A new bash release is supported by checking these declarations
 * against its headers and adding it to BASH_API_VERSIONS. */
#ifndef CONCH_BASH_API_H
#define CONCH_BASH_API_H

#include <setjmp.h>
#include <signal.h>
#include <sys/types.h>

/* The bash releases whose declarations are these (`dist_version`). */
#ifndef BASH_API_VERSIONS
#define BASH_API_VERSIONS {"5.1", "5.2", "5.3"}
#endif

typedef struct word_desc {
  char *word;
  int flags;
} WORD_DESC;

typedef struct word_list {
  struct word_list *next;
  WORD_DESC *word;
} WORD_LIST;

/* builtins.h */
struct builtin {
  char *name;
  int (*function)(WORD_LIST *);
  int flags;
  char *const *long_doc;
  const char *short_doc;
  char *handle;
};
#define BUILTIN_ENABLED 0x01

typedef struct variable SHELL_VAR;

/* builtins/common.h: parse_and_execute and its flags */
extern int parse_and_execute(char *, const char *, int);
#define SEVAL_NONINT 0x001
#define SEVAL_NOHIST 0x004
#define SEVAL_RESETLINE 0x010

/* shell.h, sig.h: the top level bash jumps to, and how it gets there */
extern sigjmp_buf top_level;
extern volatile sig_atomic_t interrupt_state;
extern void top_level_cleanup(void);
extern void sh_exit(int) __attribute__((__noreturn__));
extern void exit_shell(int) __attribute__((__noreturn__));
extern char *dist_version;
/* 2 while bash runs its `-c` string: it then execs a last simple command
   in its own place instead of forking it. */
extern int startup_state;
/* The codes of a jump to top_level (shell.h). */
#define NOT_JUMPED 0
#define FORCE_EOF 1
#define DISCARD 2

/* execute_cmd.h, builtins/common.h, flags.h, shell.h, variables.h */
extern int parse_and_execute_level, evalnest, sourcenest, funcnest, loop_level;
extern int indirection_level, read_but_dont_execute;
extern volatile int last_command_exit_value;
extern void clear_unwind_protect_list(int);

/* trap.h */
extern char *trap_list[];
#define EXIT_TRAP 0
extern int signal_is_trapped(int);
extern void restore_default_signal(int);

/* jobs.h (a bash built with job control: nojobs.c has no
   cleanup_the_pipeline, and the load function refuses such a bash) */
extern void wait_sigint_cleanup(void);
extern void stop_making_children(void);
extern void cleanup_the_pipeline(void);

/* shell.h, jobs.h: `$$`, and the process group bash takes for its own */
extern pid_t dollar_dollar_pid, shell_pgrp;

/* builtins/common.h: the directory bash is in as `cd` left it (what `pwd`
   and `${DIRSTACK[0]}` show), which an assignment to `PWD` does not move */
extern char *the_current_working_directory;

/* variables.h */
extern SHELL_VAR *bind_variable(const char *, char *, int);
extern int unbind_variable(const char *);
extern char *get_string_value(const char *);
extern int unbind_func(const char *);

#endif
