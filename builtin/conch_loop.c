/* SPDX-License-Identifier: GPL-3.0-or-later
 *
 * conch_loop: conch's session loop as a bash loadable builtin.
 *
 *   enable -f conch-loop.so conch_loop && conch_loop EVEN ODD NAME SHELL BOOT SKIP SPARE
 *
 * bash runs this instead of conch's eval loop (docs/engine.md): it reads
 * each run from the protocol descriptor (63), runs a command through
 * bash's own parser as `bash -c` input at top level (no eval, no loop
 * around it: syntax errors read `bash: -c: line N:`, `$LINENO` starts at 1,
 * a top-level `break` warns and goes on, `set -x` prints one `+`), and
 * writes `seq NUL status NUL dir NUL` to the status descriptor (62), dir
 * being the directory bash is in, as its `pwd` shows it. The
 * protocol is conch's (core/src/protocol/) unchanged: header, payload and
 * trailer on 63, records on 62, commands' output on the pipe the host gave
 * at 60. EVEN and ODD are the two unwind signals, NAME, SHELL and BOOT what
 * a command's `exit` execs (a fresh bash reading its start-up text), SKIP
 * the length of what follows this call on 63 before run 0's trailer: the
 * eval loop, for a bash that does not load this builtin, skipped unread.
 * SPARE is the descriptor of the host's spare channel (61), or `-`: with
 * one, this bash forks a spare of itself once it is ready (fork_spare).
 *
 * It never returns: it is bash's top level from its first call until bash
 * exits or execs. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__APPLE__) || defined(__FreeBSD__) || defined(__NetBSD__) || defined(__OpenBSD__)
#define purge fpurge
#else
#include <stdio_ext.h>
#define purge __fpurge
#endif
#ifdef __linux__
#include <sched.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#endif

#include "bash_api.h"

/* Where the session's descriptors live while a command runs: high and
   close-on-exec, and closed in every process bash forks (below). */
#define HIDDEN_FDS 200

/* Run 0's status names the loop that answered (0: conch's eval loop). */
#define READY_BUILTIN 1

static int proto = -1, status_fd = -1, out = -1, devnull = -1;
/* The host's spare channel (-1: this bash forks no spare). */
static int spare = -1;
static int sig_even, sig_odd;
static pid_t loop_pid;
static char *exec_name, *exec_shell, *exec_boot;

#define NO_PARITY 2

/* The parity of the run whose command runs (-1: none), of the next run
   (NO_PARITY between a run's start and its report),
   and whether an unwind signal skips the next command or is unwinding the
   current one. Written by the signal handlers. */
static volatile sig_atomic_t cmd_parity = -1, next_parity = 1, skip_next, unwinding;

/* An unwind signal: for the running command, bash's own QUIT throws to
   run_text's setjmp at its next safe point (in functions, loops, traps and
   waits too); before the command, one meant for the next run skips it. */
static void on_unwind(int sig) {
  int parity = sig == sig_odd;
  if (cmd_parity >= 0) {
    if (parity == cmd_parity) {
      unwinding = 1;
      interrupt_state = 1;
    }
  } else if (parity == next_parity) {
    skip_next = 1;
  }
}

/* SIGINT: bash's own (a command substitution whose child died of it sends
   it to bash) keeps an unwind going and is otherwise nothing, so no trap
   shows in `trap -p`; in a subshell it is the default, as bash gives
   subshells. */
static void on_sigint(int sig) {
  if (getpid() != loop_pid) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  if (unwinding) interrupt_state = 1;
}

static void handle(int sig, void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigaction(sig, &sa, NULL);
}

/* Every process bash forks (a subshell, a command substitution, a
   pipeline's part, a program) starts without the session's descriptors:
   a command finds only what `bash -c` would give it. */
static void close_session_fds(void) {
  close(proto);
  close(status_fd);
  close(out);
  close(devnull);
  if (spare >= 0) close(spare);
}

static int read_full(int fd, char *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, buf + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    got += (size_t)n;
  }
  return 0;
}

/* Reads and drops `len` bytes of `fd`. */
static int skip_full(int fd, size_t len) {
  char buf[4096];
  while (len) {
    size_t part = len < sizeof buf ? len : sizeof buf;
    if (read_full(fd, buf, part) < 0) return -1;
    len -= part;
  }
  return 0;
}

static int write_full(int fd, const char *buf, size_t len) {
  while (len) {
    ssize_t n = write(fd, buf, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/* `fd` moved to a close-on-exec descriptor at HIDDEN_FDS or above; where
   the limit of open files is lower (a command's `ulimit -n`), kept where
   it is, close-on-exec. */
static int hide(int fd) {
  int high = fcntl(fd, F_DUPFD_CLOEXEC, HIDDEN_FDS);
  if (high < 0) {
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
  }
  close(fd);
  return high;
}

/* The directory bash is in, as its `pwd` shows it: bash's own note of it,
   which a command's `PWD=/elsewhere` or `unset PWD` does not change (none
   where bash could not tell at its start: then `$PWD`). */
static const char *working_directory(void) {
  if (the_current_working_directory) return the_current_working_directory;
  const char *pwd = get_string_value("PWD");
  return pwd ? pwd : "";
}

/* Reads the trailer of the run just done and reports it; `exiting`: as the
   record of an `exit` (its seq with a leading 1). -1 when it cannot. */
static int report(int status, int exiting) {
  char trailer[16];
  if (read_full(proto, trailer, sizeof trailer) < 0) return -1;
  const char *pwd = working_directory();
  size_t cap = strlen(pwd) + 32;
  char *rec = malloc(cap);
  if (!rec) return -1;
  int len = snprintf(rec, cap, "%s%.8s%c%d%c%s%c", exiting ? "1" : "", trailer, 0, status, 0, pwd, 0);
  int failed = len < 0 || write_full(status_fd, rec, (size_t)len) < 0;
  free(rec);
  if (failed) return -1;
  next_parity = ((trailer[7] - '0') + 1) % 2;
  return 0;
}

/* Sets the parities the unwind handler compares with, with the unwind
   signals held so it never sees one without the other; a command starts
   with an unwind meant for it that came too late to skip it. */
static void set_parities(int command, int next) {
  sigset_t unwind, old;
  sigemptyset(&unwind);
  sigaddset(&unwind, sig_even);
  sigaddset(&unwind, sig_odd);
  sigprocmask(SIG_BLOCK, &unwind, &old);
  if (command >= 0 && skip_next) {
    /* The run's signal came after the loop checked for one: its command
       is abandoned at bash's first check. */
    skip_next = 0;
    unwinding = 1;
    interrupt_state = 1;
  }
  cmd_parity = command;
  next_parity = next;
  sigprocmask(SIG_SETMASK, &old, NULL);
}

/* What a builtin an unwind cut short left in stdio's buffers goes out
   now, before the run's status, as that run's output: bash's `echo` checks
   for an interrupt between its words, before its newline and its flush,
   and what it had printed would otherwise start the next command's output
   (`after` of `nano f; echo after`, stopped, then `echo kept`: `afterkept`).
   The command's redirections are undone by now (bash flushes stdout
   before it moves it), so this is where the command was writing. What
   cannot be written is dropped. */
static void flush_cut_output(void) {
  FILE *streams[] = {stdout, stderr};
  for (size_t i = 0; i < sizeof streams / sizeof *streams; i++) {
    if (fflush(streams[i]) != 0) purge(streams[i]);
    clearerr(streams[i]);
  }
}

/* After a command an unwind ended (or one that came as it ended): bash
   tidied as at its top level, and nothing of the unwind is left for the
   next command. An unwind between a fork and its wait leaves the pipeline
   half made: the next command would wait for its (killed) process first. */
static void settle_unwind(void) {
  interrupt_state = 0;
  if (!unwinding) return;
  flush_cut_output();
  top_level_cleanup();
  cleanup_the_pipeline();
  stop_making_children();
  unwinding = 0;
}

static void exit_session(int status) __attribute__((noreturn));

/* Runs the EXIT trap a command set, when the command ends, as bash runs
   one when a `bash -c` ends: `$?` is the command's status, and the trap is
   gone after it. An `exit` in it ends the session with its status; an
   interrupt ends the trap. Returns the command's status. */
static int run_command_exit_trap(int status) {
  if (!signal_is_trapped(EXIT_TRAP) || !trap_list[EXIT_TRAP]) return status;
  /* parse_and_execute frees its string; taking the trap away frees bash's. */
  char *text = strdup(trap_list[EXIT_TRAP]);
  restore_default_signal(EXIT_TRAP);
  if (!text) return status;
  sigjmp_buf saved;
  memcpy(&saved, &top_level, sizeof saved);
  last_command_exit_value = status;
  int code = sigsetjmp(top_level, 0);
  if (code != NOT_JUMPED && getpid() != loop_pid) exit_shell(last_command_exit_value);
  if (code == NOT_JUMPED) {
    parse_and_execute(text, "exit trap", SEVAL_NONINT | SEVAL_NOHIST | SEVAL_RESETLINE);
  } else if (code != DISCARD && !unwinding) {
    memcpy(&top_level, &saved, sizeof saved);
    exit_session(last_command_exit_value);
  }
  memcpy(&top_level, &saved, sizeof saved);
  last_command_exit_value = status;
  return status;
}

/* A command's `exit` (or `set -e`): its EXIT trap runs, the exit record
   goes out, and a fresh bash takes this one's place on the same
   descriptors, as conch's eval loop does. */
static void exit_session(int status) {
  status = run_command_exit_trap(status);
  if (report(status, 1) < 0) sh_exit(status);
  dup2(proto, 63);
  dup2(status_fd, 62);
  dup2(out, 1);
  dup2(out, 2);
  /* In a directory a command removed, the fresh bash would say so as it
     starts (`shell-init: error retrieving current directory`); the host's
     start-up text takes it to the nearest directory above. */
  char *here = getcwd(NULL, 0);
  if (here) {
    free(here);
  } else if (errno == ENOENT) {
    int moved = chdir("/");
    (void)moved;
  }
  char *argv[] = {exec_name, "--noprofile", "--norc", "-c", exec_boot, NULL};
  char *envp[] = {NULL};
  execve(exec_shell, argv, envp);
  sh_exit(status);
}

/* The status `bash -c` ends with after its text: `$?`, where
   parse_and_execute's own answer differs (an error in a `[[`); where
   `$?` holds one of bash's internal codes (a syntax error's 257), the
   answer (2). */
static int script_status(int answer) {
  int status = last_command_exit_value;
  return status < 0 || status > 255 ? answer : status;
}

/* Runs `text` at top level: a command as `bash -c` input, or a script of
   conch's. Returns its status. */
static int run_text(const char *text, int command) {
  const char *name = command ? "-c" : "conch";
  sigjmp_buf saved;
  int status;
  /* parse_and_execute frees the string it is given. */
  char *copy = strdup(text);
  if (!copy) return 1;
  memcpy(&saved, &top_level, sizeof saved);
  int level = indirection_level;
  indirection_level = 0;
  last_command_exit_value = 0;
  /* A throw out of wait_for leaves its SIGINT handler (and bash's note of
     the one to restore) behind: ours again, before every command. */
  wait_sigint_cleanup();
  handle(SIGINT, on_sigint);
  set_parities(next_parity, NO_PARITY);
  int code = sigsetjmp(top_level, 0);
  if (code != NOT_JUMPED && getpid() != loop_pid) {
    /* A subshell of the command ended (`( exit 3 )`): it exits, as in bash. */
    exit_shell(last_command_exit_value);
  }
  /* The statuses `bash -c` ends with: script_status, 1 for a discarded
     command, 127 for a forced end of input (an unbound variable under
     `set -u`). */
  if (code == NOT_JUMPED) {
    status = script_status(parse_and_execute(copy, name, SEVAL_NOHIST | SEVAL_RESETLINE));
  } else if (unwinding) {
    status = last_command_exit_value;
  } else if (code == DISCARD) {
    status = 1;
  } else {
    /* `exit`, `set -e`, `set -u`, `set -n` ended the shell's input. */
    set_parities(-1, NO_PARITY);
    memcpy(&top_level, &saved, sizeof saved);
    indirection_level = level;
    exit_session(code == FORCE_EOF ? 127 : last_command_exit_value);
  }
  memcpy(&top_level, &saved, sizeof saved);
  settle_unwind();
  /* The command's EXIT trap, while an unwind meant for this run can still
     end it. A script of conch's runs it itself (`conch_loop exit-trap`). */
  if (command) status = run_command_exit_trap(status);
  set_parities(-1, NO_PARITY);
  settle_unwind();
  indirection_level = level;
  return status;
}

/* A script (kind `s`): conch's text for a per-run cwd or environment, a
   new output pipe (switch_output) or a release (RELEASE), given the output
   and status descriptors at their protocol numbers, 60 and 62. Returns
   its status; a release does not return. */
static int run_script(const char *text) {
  if (skip_next) {
    /* Abandoned before it started: its command part is skipped. */
    next_parity = NO_PARITY;
    bind_variable("__conch_ab", "1", 0);
  }
  skip_next = 0;
  dup2(out, 60);
  dup2(status_fd, 62);
  dup2(devnull, 1);
  dup2(devnull, 2);
  int status = run_text(text, 0);
  unbind_variable("__conch_ab");
  /* A script with a cwd keeps the command's status there (its last step,
     going back to the session's directory, has its own). */
  const char *kept = get_string_value("__conch_s");
  if (kept) {
    status = atoi(kept);
    unbind_variable("__conch_s");
  }
  if (fcntl(60, F_GETFD) < 0) {
    /* Released: the command went to the background as a job. Let go of
       the pipes and wait for the end of input. */
    close(out);
    close(status_fd);
    char rest[17];
    read_full(proto, rest, 16);
    read_full(proto, rest, 1);
    sh_exit(0);
  }
  /* 60 is the output pipe now (a new one after switch_output). */
  close(out);
  out = hide(60);
  close(62);
  dup2(out, 1);
  dup2(out, 2);
  return status;
}

#ifdef __linux__
/* Receives what a spare takes over with: the directory in `dir`, the
   descriptors in `fds`. Returns how many descriptors came (0: the host
   closed the channel, or a message without them). */
static int receive(char *dir, size_t cap, int fds[4]) {
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(4 * sizeof(int))];
  } control;
  struct iovec iov = {dir, cap - 1};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.buf;
  msg.msg_controllen = sizeof control.buf;
  ssize_t n;
  do n = recvmsg(spare, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return 0;
  dir[n] = 0;
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) return 0;
  int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
  memcpy(fds, CMSG_DATA(c), (size_t)count * sizeof(int));
  return count;
}

/* Tells the host the spare's pid on the spare channel. Both the bash that
   forks the spare and the spare itself do, each as it goes on from the
   fork, and the host reads one copy: a spare that dies before it runs (a
   command killed it at once) is the host's child all the same, which the
   host must know to collect, and a bash killed between the fork and its
   write (a reset or close right after it was ready) leaves a live spare
   that would hold the channel open with nothing on it. Without SIGPIPE:
   the host may have taken the spare over from the bash's copy, and closed
   its end, before the spare first ran; what it sent is still there for
   the spare to read. */
static void tell_spare_pid(pid_t pid) {
  (void)send(spare, &pid, sizeof pid, MSG_NOSIGNAL);
}

/* The spare, from its fork: it holds none of the session's descriptors,
   and waits (it and the bash that forked it told the host its pid). The
   host's first message makes it
   the session's bash (returns); end-of-file, or the host's death, ends
   it. Until then it dies with the host; from then on it is frozen, as a
   bash the host starts is (the host's guard takes its tree down). */
static void wait_as_spare(pid_t host) {
  tell_spare_pid(getpid());
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != host) _exit(0);
  setsid();
  close(proto);
  close(status_fd);
  close(out);
  dup2(devnull, 1);
  dup2(devnull, 2);
  char dir[4096];
  int fds[4];
  int count = receive(dir, sizeof dir, fds);
  if (count < 3) _exit(0);
  prctl(PR_SET_PDEATHSIG, SIGSTOP);
  if (getppid() != host) _exit(0);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  close(spare);
  proto = hide(fds[0]);
  status_fd = hide(fds[1]);
  out = hide(fds[2]);
  spare = count > 3 ? hide(fds[3]) : -1;
  dup2(out, 1);
  dup2(out, 2);
  /* The start directory again: a directory removed and made again since
     the fork is another one. */
  if (chdir(dir) < 0) _exit(1);
  dollar_dollar_pid = shell_pgrp = loop_pid = getpid();
  /* `$SECONDS` counts from the session's start, not the spare's, and
     `$RANDOM` takes a seed of its own, as a bash seeds it at its start:
     every spare of a session would otherwise give the numbers its first
     bash gave. */
  bind_variable("SECONDS", "0", 0);
  unsigned int seed;
  if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed)
    seed = (unsigned int)getpid() ^ (unsigned int)time(NULL);
  char digits[16];
  snprintf(digits, sizeof digits, "%u", seed % 1000000000u);
  bind_variable("RANDOM", digits, 0);
}
#endif

/* Forks the spare: this bash as it is before its first command, a child
   of the host (CLONE_PARENT) rather than of this bash, so it outlives this
   bash's tree when a reset kills it, and takes this bash's place then: a
   reset is a fork, not a bash's start. Returns 1 in the spare once it took
   over, 0 in this bash. Where it cannot fork (not Linux, or bash is the
   first process of a pid namespace), the host reads end-of-file and starts
   a bash instead. */
static int fork_spare(void) {
#ifdef __linux__
  pid_t host = getppid();
  /* Not glibc's fork, which has no CLONE_PARENT: nothing of glibc runs in
     the child, which is as bash is (one thread, no lock held). */
  long child = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
  if (child == 0) {
    wait_as_spare(host);
    return 1;
  }
  if (child > 0) tell_spare_pid((pid_t)child);
#endif
  close(spare);
  spare = -1;
  return 0;
}

static int conch_loop_builtin(WORD_LIST *list) {
  /* In a script of conch's (a run with a cwd or variables of its own):
     `conch_loop run` runs the command, `$BASH_EXECUTION_STRING`, as `bash
     -c` input; `conch_loop exit-trap` its EXIT trap, before bash goes back
     to the session's directory. */
  if (loop_pid) {
    const char *what = list && !list->next ? list->word->word : "";
    if (strcmp(what, "exit-trap") == 0) return run_command_exit_trap(last_command_exit_value);
    const char *command = get_string_value("BASH_EXECUTION_STRING");
    if (strcmp(what, "run") != 0 || !command) return 2;
    char *copy = strdup(command);
    if (!copy) return 1;
    indirection_level = 0;
    return script_status(parse_and_execute(copy, "-c", SEVAL_NOHIST | SEVAL_RESETLINE));
  }
  char *args[7];
  for (int i = 0; i < 7; i++) {
    if (!list) return 2;
    args[i] = list->word->word;
    list = list->next;
  }
  sig_even = atoi(args[0]);
  sig_odd = atoi(args[1]);
  exec_name = strdup(args[2]);
  exec_shell = strdup(args[3]);
  exec_boot = strdup(args[4]);
  proto = hide(63);
  status_fd = hide(62);
  out = hide(60);
  devnull = hide(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (strcmp(args[6], "-") != 0) spare = hide(atoi(args[6]));
  if (proto < 0 || status_fd < 0 || out < 0 || devnull < 0) sh_exit(1);
  if (skip_full(proto, strtoul(args[5], NULL, 10)) < 0) sh_exit(1);
  loop_pid = getpid();
  handle(sig_even, on_unwind);
  handle(sig_odd, on_unwind);
  handle(SIGINT, on_sigint);
  pthread_atfork(NULL, NULL, close_session_fds);
  /* From here this builtin is the shell's top level. */
  clear_unwind_protect_list(0);
  parse_and_execute_level = 0;
  evalnest = sourcenest = funcnest = loop_level = 0;
  /* Not `bash -c` any more (2): a command's last program must never take
     bash's place. 3 is what bash gives a shell with no file or terminal
     to read, which treats jobs as `bash -c` does. */
  startup_state = 3;

  int status = READY_BUILTIN;
  char header[10], digits[9];
  char *payload = NULL;
  for (;;) {
    if (report(status, 0) < 0) sh_exit(status);
    /* Ready, and nothing run yet: the spare's moment. One that takes over
       reports run 0 of its own session. */
    if (spare >= 0 && fork_spare()) {
      status = READY_BUILTIN;
      continue;
    }
    /* The end of input: the host is gone. */
    if (read_full(proto, header, sizeof header) < 0) sh_exit(status);
    memcpy(digits, header, 8);
    digits[8] = 0;
    size_t len = strtoul(digits, NULL, 10);
    char *grown = realloc(payload, len + 1);
    if (!grown) sh_exit(1);
    payload = grown;
    if (read_full(proto, payload, len) < 0) sh_exit(status);
    payload[len] = 0;
    if (header[9] == 'p') {
      if (skip_next) {
        /* Abandoned before it started; more signals for it change nothing. */
        next_parity = NO_PARITY;
        skip_next = 0;
        status = 130;
        continue;
      }
      dup2(out, 1);
      dup2(out, 2);
      bind_variable("BASH_EXECUTION_STRING", payload, 0);
      status = run_text(payload, 1);
    } else {
      status = run_script(payload);
    }
    /* conch's scripts (a run with a cwd of its own) reach bash's builtins
       as `builtin …`: a function of that name lasts until the end of the
       command that defines it, as under the eval loop. */
    unbind_func("builtin");
    /* `set -n` stops the shell, as it ends a `bash -c`. */
    if (read_but_dont_execute) exit_session(0);
  }
}

/* Refuses to load into a bash this was not written for: its internals may
   differ, and conch then runs its eval loop. */
int conch_loop_builtin_load(char *name) {
  static const char *const versions[] = BASH_API_VERSIONS;
  /* bash binds functions when first called: one it lacks (a build
     without job control) is found missing here, not mid-command. The
     variables are looked up the same way. */
  static const char *const functions[] = {
      "parse_and_execute", "top_level_cleanup", "exit_shell", "clear_unwind_protect_list",
      "restore_default_signal", "wait_sigint_cleanup", "stop_making_children",
      "cleanup_the_pipeline", "bind_variable", "unbind_variable", "get_string_value", "unbind_func",
      /* and the variables a spare sets (fork_spare) and a report reads */
      "dollar_dollar_pid", "shell_pgrp", "the_current_working_directory",
  };
  (void)name;
  for (size_t i = 0; i < sizeof functions / sizeof *functions; i++)
    if (!dlsym(RTLD_DEFAULT, functions[i])) return 0;
  for (size_t i = 0; i < sizeof versions / sizeof *versions; i++)
    if (dist_version && strcmp(dist_version, versions[i]) == 0) return 1;
  return 0;
}

static char *conch_loop_doc[] = {"conch's session loop: run by conch, not by hand.", NULL};

struct builtin conch_loop_struct = {
    "conch_loop", conch_loop_builtin, BUILTIN_ENABLED, conch_loop_doc,
    "conch_loop EVEN ODD NAME SHELL BOOT SKIP SPARE", 0,
};
