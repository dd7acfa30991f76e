/* LD_PRELOAD shim used only when the C tests run under valgrind.
 *
 * conch waits for its children with pidfd_open(2), which valgrind 3.19 (the
 * one Debian 12 ships) does not implement: the syscall fails with ENOSYS.
 * This shim wraps libc's syscall(): when pidfd_open fails with ENOSYS, it
 * returns an emulated pidfd instead, one end of a socket pair that becomes
 * readable when the child exits, as a real pidfd does. A helper thread
 * waits for the exit with waitid(WNOWAIT), which leaves the child for conch
 * to reap. Every other syscall, and pidfd_open when the kernel has it, goes
 * to libc untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

typedef long (*syscall_fn)(long, ...);

struct watch {
  pid_t pid;
  int fd;
};

static void *watch_exit(void *arg) {
  struct watch w = *(struct watch *)arg;
  free(arg);
  siginfo_t info;
  /* Returns at exit (or with ECHILD once conch reaped it): either way the
   * process is gone, so the pidfd becomes readable. */
  while (waitid(P_PID, (id_t)w.pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  (void)send(w.fd, "x", 1, MSG_NOSIGNAL);
  close(w.fd);
  return NULL;
}

static long emulated_pidfd_open(pid_t pid) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0) return -1;
  struct watch *w = malloc(sizeof *w);
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (w == NULL) goto fail;
  w->pid = pid;
  w->fd = fds[1];
  if (pthread_create(&t, &attr, watch_exit, w) != 0) {
    free(w);
    goto fail;
  }
  pthread_attr_destroy(&attr);
  return fds[0];
fail:
  pthread_attr_destroy(&attr);
  close(fds[0]);
  close(fds[1]);
  errno = ENOMEM;
  return -1;
}

/* Set once the kernel (valgrind) said ENOSYS, so it warns only once. */
static int pidfd_missing;

long syscall(long number, ...) {
  static syscall_fn real;
  if (real == NULL) real = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
  va_end(ap);
  bool pidfd_open = number == SYS_pidfd_open && a[1] == 0;
  if (pidfd_open && __atomic_load_n(&pidfd_missing, __ATOMIC_RELAXED))
    return emulated_pidfd_open((pid_t)a[0]);
  long r = real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  if (pidfd_open && r < 0 && errno == ENOSYS) {
    __atomic_store_n(&pidfd_missing, 1, __ATOMIC_RELAXED);
    return emulated_pidfd_open((pid_t)a[0]);
  }
  return r;
}
