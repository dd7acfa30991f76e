/* The sandbox of the C face (conch_shell_options.sandbox). Replays the cases
 * of tests/vectors/sandbox_options.json that conch_sandbox can hold (the
 * Python and Node suites replay them all): a policy is read into the
 * core's, every value checked by the core's parser under its C name
 * (opts->sandbox->allow_tcp_ports[1]). Then what only C can pass, and the
 * sandbox at work on a real session: a write outside the allowed paths and
 * a TCP connect under network deny are refused, in a shell, a one-shot
 * run and a PTY run; a kernel made to look too old gives
 * CONCH_ERR_SANDBOX_UNAVAILABLE. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"
#include "vectors_sandbox_options.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif

/* Whether this process sees a kernel that can enforce a sandbox (Landlock
 * ABI 3, what the filesystem rules need). valgrind does not model the
 * Landlock and seccomp calls (they fail with ENOSYS there), so under it the
 * checks of enforcement are left to the run without valgrind that
 * scripts/test-c.sh makes, and this run checks the fail-closed error. */
static bool enforcing;

static bool kernel_enforces(void) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1 /* VERSION */);
  return abi >= 3;
}

/* A shell in `cwd` under `sandbox` (NULL: none), or NULL with the error. */
static conch_shell *shell_in(const char *cwd, const conch_sandbox *sandbox) {
  conch_shell_options o = {0};
  o.snapshot = "none";
  o.cwd = cwd;
  o.sandbox = sandbox;
  return conch_shell_new(&o);
}

/* Runs `command`; its exit code, or -1000 when it has none or the run fails. */
static int run_code(conch_shell *sh, const char *command, char *output, size_t cap) {
  conch_run_options o = {0};
  o.command = command;
  conch_bash_result *r = NULL;
  if (!CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_OK, command)) return -1000;
  int code = r->has_exit_code ? r->exit_code : -1000;
  if (output) snprintf(output, cap, "%s", r->output);
  conch_bash_result_free(r);
  return code;
}

static void test_vectors(void) {
  size_t n = sizeof SANDBOX_CASES / sizeof SANDBOX_CASES[0];
  for (size_t i = 0; i < n; i++) {
    const struct sandbox_case *c = &SANDBOX_CASES[i];
    conch_shell *sh = shell_in("/tmp", c->no_sandbox ? NULL : &c->sandbox);
    if (c->expect_error) {
      CHECK(sh == NULL, "%s: refused", c->name);
      CHECK_STR(conch_last_error(), c->expect_error, c->name);
    } else if (sh == NULL) {
      /* Read, but this kernel cannot enforce it: also an accepted value.
       * Without Landlock and seccomp (valgrind), best_effort may fail to
       * start bash; the policy was read all the same. */
      CHECK(strstr(conch_last_error(), "the sandbox cannot be enforced") != NULL ||
                (!enforcing && strstr(conch_last_error(), "opts->sandbox") == NULL),
            "%s: accepted", c->name);
    } else {
      char out[64];
      CHECK(run_code(sh, "echo ok", out, sizeof out) == 0 && str_eq(out, "ok\n"), "%s: runs",
            c->name);
      conch_shell_free(sh);
    }
  }
}

static void expect_refused(const conch_sandbox *sandbox, const char *message) {
  conch_shell *sh = shell_in("/tmp", sandbox);
  CHECK(sh == NULL, "refused: %s", message);
  CHECK_STR(conch_last_error(), message, "the refusal names the field");
  conch_shell_free(sh);
}

static void test_c_fields(void) {
  conch_sandbox s = {0};
  s.network = 7;
  expect_refused(&s, "conch_shell_new: opts->sandbox->network must be CONCH_NETWORK_DENY, "
                     "CONCH_NETWORK_ALLOW or CONCH_NETWORK_DOMAINS, got 7");
  s = (conch_sandbox){0};
  s.allow_tcp_ports_count = 2;
  expect_refused(&s, "conch_shell_new: opts->sandbox->allow_tcp_ports is NULL but "
                     "opts->sandbox->allow_tcp_ports_count is not 0");
  s = (conch_sandbox){0};
  const char *const bad_utf8[] = {"/tmp", "\xff\xfe", NULL};
  s.writable = bad_utf8;
  conch_shell *sh = shell_in("/tmp", &s);
  CHECK(sh == NULL && strstr(conch_last_error(), "opts->sandbox->writable[1]") != NULL,
        "a path that is not UTF-8 is named by its index");
  conch_shell_free(sh);
}

/* A scratch tree: <root>/work (the cwd), <root>/outside, <root>/extra. */
static char root[64], work[96], outside[96], extra[96];

static bool make_tree(void) {
  snprintf(root, sizeof root, "/tmp/conch-c-sandbox-XXXXXX");
  if (!SETUP(mkdtemp(root) != NULL, "mkdtemp")) return false;
  snprintf(work, sizeof work, "%s/work", root);
  snprintf(outside, sizeof outside, "%s/outside", root);
  snprintf(extra, sizeof extra, "%s/extra", root);
  return SETUP(mkdir(work, 0700) == 0 && mkdir(outside, 0700) == 0 && mkdir(extra, 0700) == 0,
               "mkdir");
}

static void test_writes(void) {
  const char *const writable[] = {extra, NULL};
  conch_sandbox s = {0};
  s.writable = writable;
  conch_shell *sh = shell_in(work, &s);
  if (!CHECK(sh != NULL, "a sandboxed shell")) return;
  char out[256], cmd[256];
  CHECK(run_code(sh, "echo in > inside.txt && cat inside.txt", out, sizeof out) == 0 &&
            str_eq(out, "in\n"),
        "a write in the cwd works");
  snprintf(cmd, sizeof cmd, "echo x > %s/f && touch \"$TMPDIR/t\"", extra);
  CHECK(run_code(sh, cmd, NULL, 0) == 0, "a write in a writable path and TMPDIR works");
  snprintf(cmd, sizeof cmd, "echo out > %s/f", outside);
  CHECK(run_code(sh, cmd, out, sizeof out) != 0 && strstr(out, "Read-only file system") != NULL,
        "a write outside is refused, got \"%s\"", out);
  conch_shell_free(sh);
  snprintf(cmd, sizeof cmd, "%s/f", outside);
  CHECK(access(cmd, F_OK) != 0, "nothing was written outside");
}

static void test_network(void) {
  int server = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (!SETUP(server >= 0 && bind(server, (struct sockaddr *)&addr, len) == 0 &&
                 listen(server, 16) == 0 &&
                 getsockname(server, (struct sockaddr *)&addr, &len) == 0,
             "a local TCP server")) {
    if (server >= 0) close(server);
    return;
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "exec 3<>/dev/tcp/127.0.0.1/%u && echo connected",
           (unsigned)ntohs(addr.sin_port));
  conch_sandbox deny = {0}, allow = {0};
  allow.network = CONCH_NETWORK_ALLOW;
  const struct {
    const conch_sandbox *sandbox;
    bool connects;
    const char *what;
  } runs[] = {{NULL, true, "no sandbox (the control)"},
              {&deny, false, "network deny"},
              {&allow, true, "network allow"}};
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    conch_shell *sh = shell_in(work, runs[i].sandbox);
    if (!CHECK(sh != NULL, "%s: a shell", runs[i].what)) continue;
    char out[256];
    run_code(sh, cmd, out, sizeof out);
    CHECK(str_eq(out, "connected\n") == runs[i].connects, "%s: got \"%s\"", runs[i].what, out);
    conch_shell_free(sh);
  }
  close(server);
}

/* conch_execute_shell and conch_pty_start take the same sandbox. */
static void test_one_shot_and_pty(void) {
  conch_sandbox s = {0};
  char cmd[256];
  snprintf(cmd, sizeof cmd, "echo in > %s/one && echo out > %s/one", work, outside);
  conch_execute_options eo = {0};
  eo.command = cmd;
  eo.cwd = work;
  eo.sandbox = &s;
  conch_bash_result *r = NULL;
  if (CHECK_RC(conch_execute_shell(&eo, NULL, NULL, &r), CONCH_OK, "conch_execute_shell")) {
    CHECK(r->has_exit_code && r->exit_code != 0 && strstr(r->output, "Read-only file system") != NULL,
          "execute_shell: a write outside is refused, got \"%s\"", r->output);
    conch_bash_result_free(r);
  }
  snprintf(cmd, sizeof cmd, "%s/one", work);
  CHECK(access(cmd, F_OK) == 0, "execute_shell: the write inside was made");

  snprintf(cmd, sizeof cmd, "echo out > %s/pty", outside);
  conch_pty_options po = {0};
  po.command = cmd;
  po.cwd = work;
  po.timeout_ms = 20000;
  po.sandbox = &s;
  conch_pty *pty = conch_pty_new();
  conch_pty_result *pr = NULL;
  if (CHECK_RC(conch_pty_start(pty, &po, NULL, NULL, &pr), CONCH_OK, "conch_pty_start")) {
    CHECK(pr->has_exit_code && pr->exit_code != 0, "pty: a write outside is refused, got \"%s\"",
          pr->output);
    conch_pty_result_free(pr);
  }
  conch_pty_free(pty);
  snprintf(cmd, sizeof cmd, "%s/pty", outside);
  CHECK(access(cmd, F_OK) != 0, "pty: nothing was written outside");
}

/* The bash tool takes the same sandbox, with its project directory
 * writable; its description says so. */
static void test_tool(void) {
  conch_sandbox s = {0};
  conch_tool_options o = {0};
  o.cwd = work;
  o.snapshot = "none";
  o.session_key = "c-sandbox";
  o.sandbox = &s;
  conch_tool *tool = conch_tool_new(&o);
  if (!CHECK(tool != NULL, "conch_tool_new with a sandbox")) return;
  char *def = conch_tool_definition(tool);
  CHECK(def != NULL && strstr(def, "Commands run in a sandbox") != NULL,
        "the definition states the sandbox");
  conch_string_free(def);
  char args[256];
  snprintf(args, sizeof args, "{\"command\": \"echo out > %s/tool\"}", outside);
  conch_tool_result *r = NULL;
  CHECK_RC(conch_tool_execute(tool, args, NULL, false, NULL, NULL, &r), CONCH_ERR_TOOL,
           "a write outside fails the call");
  if (r) CHECK(strstr(r->text, "Read-only file system") != NULL, "the model reads why: \"%s\"", r->text);
  conch_tool_result_free(r);
  r = NULL;
  CHECK_RC(conch_tool_execute(tool, "{\"command\": \"echo in > tool\"}", NULL, false, NULL, NULL, &r),
           CONCH_OK, "a write in the project directory works");
  conch_tool_result_free(r);
  conch_tool_free(tool);
  conch_close_sessions("c-sandbox");
}

/* A kernel made to look too old (no Landlock): the typed error, nothing
 * started; best_effort runs anyway. */
static void test_unavailable(void) {
  setenv("CONCH_TEST_LANDLOCK_ABI", "0", 1);
  conch_sandbox s = {0};
  conch_shell *sh = shell_in(work, &s);
  CHECK(sh == NULL, "no shell without Landlock");
  CHECK(strncmp(conch_last_error(), "the sandbox cannot be enforced: ", 32) == 0,
        "the error names the sandbox");
  conch_execute_options eo = {0};
  eo.command = "true";
  eo.sandbox = &s;
  conch_bash_result *r = NULL;
  CHECK_RC(conch_execute_shell(&eo, NULL, NULL, &r), CONCH_ERR_SANDBOX_UNAVAILABLE,
           "conch_execute_shell without Landlock");
  CHECK(r == NULL, "no result");
  conch_tool_options to = {0};
  to.cwd = work;
  to.sandbox = &s;
  conch_tool *tool = conch_tool_new(&to);
  CHECK(tool == NULL && strncmp(conch_last_error(), "the sandbox cannot be enforced: ", 32) == 0,
        "conch_tool_new without Landlock");
  conch_tool_free(tool);
  unsetenv("CONCH_TEST_LANDLOCK_ABI");
  if (!enforcing) return; /* best_effort needs seccomp at least */
  setenv("CONCH_TEST_LANDLOCK_ABI", "0", 1);
  s.best_effort = true;
  sh = shell_in(work, &s);
  if (CHECK(sh != NULL, "best_effort: a shell anyway")) {
    CHECK(run_code(sh, "true", NULL, 0) == 0, "best_effort: it runs");
    conch_shell_free(sh);
  }
  unsetenv("CONCH_TEST_LANDLOCK_ABI");
}

/* conch_shell_sandbox_applied: what of the sandbox is in force. The strict
 * default applies whole; best_effort on a kernel made to look too old
 * names what it left out; a shell without a sandbox has none. */
static void test_applied(void) {
  conch_sandbox_applied *a = NULL;
  conch_shell *sh = shell_in(work, NULL);
  if (CHECK(sh != NULL, "applied: a shell without a sandbox")) {
    CHECK_RC(conch_shell_sandbox_applied(sh, &a), CONCH_ERR_NOT_FOUND, "applied: no sandbox");
    CHECK_STR(conch_last_error(), "this shell has no sandbox", "applied: the error");
    CHECK(a == NULL, "applied: out untouched");
    conch_shell_free(sh);
  }
  if (!enforcing) return;
  conch_sandbox s = {0};
  sh = shell_in(work, &s);
  if (CHECK(sh != NULL, "applied: a strict shell")) {
    if (CHECK_RC(conch_shell_sandbox_applied(sh, &a), CONCH_OK, "applied: strict")) {
      CHECK(a->landlock_abi >= 3, "applied: the kernel's Landlock ABI");
      CHECK(a->filesystem && a->network, "applied: filesystem, network");
      CHECK(!a->limits && !a->tcp_ports && !a->processes && !a->session_memory,
            "applied: nothing not asked");
      CHECK(a->not_applied == NULL, "applied: nothing left out");
      conch_sandbox_applied_free(a);
    }
    conch_shell_free(sh);
  }
  setenv("CONCH_TEST_LANDLOCK_ABI", "0", 1);
  s.best_effort = true;
  sh = shell_in(work, &s);
  if (CHECK(sh != NULL, "applied: best_effort without Landlock")) {
    a = NULL;
    if (CHECK_RC(conch_shell_sandbox_applied(sh, &a), CONCH_OK, "applied: best_effort")) {
      CHECK(a->landlock_abi == 0 && !a->filesystem, "applied: no filesystem rules");
      CHECK(a->not_applied != NULL && strstr(a->not_applied, "Landlock") != NULL,
            "applied: not_applied names Landlock (%s)", a->not_applied ? a->not_applied : "NULL");
      conch_sandbox_applied_free(a);
    }
    conch_shell_free(sh);
  }
  unsetenv("CONCH_TEST_LANDLOCK_ABI");
}

int main(void) {
  enforcing = kernel_enforces();
  if (!enforcing) printf("no Landlock seen (valgrind?): enforcement not checked in this run\n");
  test_vectors();
  test_c_fields();
  if (make_tree()) {
    if (enforcing) {
      test_writes();
      test_network();
      test_one_shot_and_pty();
      test_tool();
    }
    test_unavailable();
    test_applied();
    remove_tree(root);
  }
  return check_finish();
}
