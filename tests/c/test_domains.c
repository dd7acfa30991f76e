/* Network by name through the C API: a shell whose conch_sandbox has
 * network CONCH_NETWORK_DOMAINS reaches the allowed names of
 * tests/net/server.py (HTTPS on 127.0.0.2, named through `resolve`) and no
 * other; a refused name is in the result's sandbox_violations and on the
 * last line of its output; conch_shell_set_network widens the policy for
 * the next run, and narrows it to nothing with CONCH_NETWORK_DENY. Bad
 * patterns, resolve entries and network values are refused naming the
 * field, at conch_shell_new and at conch_shell_set_network.
 *
 * valgrind does not model Landlock (ENOSYS under it): there a domain
 * policy fails closed (CONCH_ERR_SANDBOX_UNAVAILABLE), which this run
 * checks; scripts/test-c.sh runs the test once more without valgrind for
 * the policy at work. The server is CONCH_NET_SERVER (the path of
 * tests/net/server.py, set by scripts/test-c.sh). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif

/* Landlock ABI 4 (TCP port rules): what a domain policy needs. */
static bool kernel_enforces(void) {
  return syscall(SYS_landlock_create_ruleset, NULL, 0, 1 /* VERSION */) >= 4;
}

static const char *const RESOLVE[] = {"registry.test=127.0.0.2", "unlisted.test=127.0.0.2",
                                      "denied.test=127.0.0.2", NULL};

static conch_shell *domain_shell(const char *cwd, const conch_domain_policy *domains) {
  conch_sandbox s = {0};
  s.network = CONCH_NETWORK_DOMAINS;
  s.domains = *domains;
  conch_shell_options o = {0};
  o.snapshot = "none";
  o.cwd = cwd;
  o.sandbox = &s;
  return conch_shell_new(&o);
}

static void expect_error(const char *actual, const char *expected, const char *what) {
  CHECK(strstr(actual, expected) != NULL, "%s: the error says \"%s\", got \"%s\"", what, expected,
        actual);
}

static void test_bad_policies_are_named(void) {
  const char *const bad_allow[] = {"ok.test", "bad pattern", NULL};
  conch_domain_policy d = {0};
  d.allow = bad_allow;
  conch_shell *sh = domain_shell("/tmp", &d);
  CHECK(sh == NULL, "a bad allow pattern is refused");
  expect_error(conch_last_error(),
               "conch_shell_new: opts->sandbox->domains.allow[1] must be a domain pattern",
               "bad allow");
  conch_shell_free(sh);

  const char *const bad_deny[] = {"*.", NULL};
  d = (conch_domain_policy){0};
  d.deny = bad_deny;
  sh = domain_shell("/tmp", &d);
  CHECK(sh == NULL, "a bad deny pattern is refused");
  expect_error(conch_last_error(), "opts->sandbox->domains.deny[0] must be a domain pattern",
               "bad deny");
  conch_shell_free(sh);

  const char *const no_equals[] = {"registry.test", NULL};
  d = (conch_domain_policy){0};
  d.resolve = no_equals;
  sh = domain_shell("/tmp", &d);
  CHECK(sh == NULL, "a resolve entry without = is refused");
  expect_error(conch_last_error(),
               "opts->sandbox->domains.resolve[0] is not of the form NAME=IP: \"registry.test\"",
               "resolve without =");
  conch_shell_free(sh);

  const char *const bad_ip[] = {"registry.test=nowhere", NULL};
  d.resolve = bad_ip;
  sh = domain_shell("/tmp", &d);
  CHECK(sh == NULL, "a resolve entry that is no address is refused");
  expect_error(conch_last_error(), "opts->sandbox->domains.resolve.registry.test must be an IP address",
               "resolve to no address");
  conch_shell_free(sh);

  /* Lists with another network are a contradiction, not ignored. */
  const char *const allow[] = {"registry.test", NULL};
  conch_sandbox s = {0};
  s.domains.allow = allow;
  conch_shell_options o = {0};
  o.snapshot = "none";
  o.sandbox = &s;
  sh = conch_shell_new(&o);
  CHECK(sh == NULL, "domain lists with CONCH_NETWORK_DENY are refused");
  CHECK_STR(conch_last_error(),
            "conch_shell_new: opts->sandbox->domains is set but opts->sandbox->network is not "
            "CONCH_NETWORK_DOMAINS",
            "lists without CONCH_NETWORK_DOMAINS");
  conch_shell_free(sh);
  s = (conch_sandbox){0};
  s.network = 3;
  sh = conch_shell_new(&o);
  CHECK(sh == NULL, "network 3 is refused");
  CHECK_STR(conch_last_error(),
            "conch_shell_new: opts->sandbox->network must be CONCH_NETWORK_DENY, "
            "CONCH_NETWORK_ALLOW or CONCH_NETWORK_DOMAINS, got 3",
            "network out of range");
  conch_shell_free(sh);
}

static void test_set_network_needs_a_domain_policy(void) {
  conch_shell_options o = {0};
  o.snapshot = "none";
  conch_shell *sh = conch_shell_new(&o);
  if (!CHECK(sh != NULL, "a shell without a sandbox")) return;
  const char *const allow[] = {"registry.test", NULL};
  conch_domain_policy d = {0};
  d.allow = allow;
  CHECK_RC(conch_shell_set_network(sh, CONCH_NETWORK_DOMAINS, &d), CONCH_ERR_INVALID_ARG,
           "set_network without a domain policy");
  expect_error(conch_last_error(), "set_network needs a session started with a domain policy",
               "the core's words");
  const char *const bad[] = {"registry.test", "a b", NULL};
  d.allow = bad;
  CHECK_RC(conch_shell_set_network(sh, CONCH_NETWORK_DOMAINS, &d), CONCH_ERR_INVALID_ARG,
           "a bad pattern");
  expect_error(conch_last_error(), "domains.allow[1] must be a domain pattern", "named");
  CHECK_RC(conch_shell_set_network(sh, 9, NULL), CONCH_ERR_INVALID_ARG, "network 9");
  expect_error(conch_last_error(), "network must be CONCH_NETWORK_DENY", "named");
  d.allow = allow;
  CHECK_RC(conch_shell_set_network(sh, CONCH_NETWORK_DENY, &d), CONCH_ERR_INVALID_ARG,
           "lists with CONCH_NETWORK_DENY");
  CHECK_STR(conch_last_error(),
            "conch_shell_set_network: domains is set but network is not CONCH_NETWORK_DOMAINS",
            "lists without CONCH_NETWORK_DOMAINS");
  conch_shell_free(sh);
}

/* tests/net/server.py, its stdin held open (its end stops it). */
static pid_t server_pid = -1;
static int server_stdin = -1;
static int https_port, http_port;

static bool start_server(const char *dir) {
  const char *script = getenv("CONCH_NET_SERVER");
  if (!SETUP(script != NULL, "CONCH_NET_SERVER names tests/net/server.py")) return false;
  int in[2], out[2];
  if (!SETUP(pipe(in) == 0 && pipe(out) == 0, "pipes")) return false;
  server_pid = fork();
  if (server_pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    execlp("python3", "python3", script, dir, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  server_stdin = in[1];
  FILE *lines = fdopen(out[0], "r");
  bool ok = lines != NULL && fscanf(lines, "https %d\nhttp %d", &https_port, &http_port) == 2;
  if (lines) fclose(lines);
  return SETUP(ok, "the server printed its ports");
}

static void stop_server(void) {
  if (server_pid <= 0) return;
  close(server_stdin);
  kill(server_pid, SIGTERM);
  waitpid(server_pid, NULL, 0);
}

/* Runs `command`; the result (free it), or NULL. */
static conch_bash_result *run(conch_shell *sh, const char *command) {
  conch_run_options o = {0};
  o.command = command;
  o.timeout_ms = 30000;
  conch_bash_result *r = NULL;
  if (!CHECK_RC(conch_shell_run(sh, &o, NULL, NULL, &r), CONCH_OK, command)) return NULL;
  return r;
}

static char cert[128];

static void curl(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "curl -sS --max-time 10 --cacert %s https://%s:%d/", cert, name, https_port);
}

static void expect_reached(conch_shell *sh, const char *name, const char *what) {
  char cmd[512], want[128];
  curl(cmd, sizeof cmd, name);
  snprintf(want, sizeof want, "hello from %s\n", name);
  conch_bash_result *r = run(sh, cmd);
  if (!r) return;
  CHECK(r->has_exit_code && r->exit_code == 0, "%s: exit 0, output \"%s\"", what, r->output);
  CHECK_STR(r->output, want, what);
  CHECK(r->sandbox_violations == NULL && r->sandbox_violations_count == 0, "%s: no violation",
        what);
  conch_bash_result_free(r);
}

static void expect_blocked(conch_shell *sh, const char *name, const char *what) {
  char cmd[512], target[128], line[256];
  curl(cmd, sizeof cmd, name);
  snprintf(target, sizeof target, "%s:%d", name, https_port);
  snprintf(line, sizeof line, "[sandbox] blocked: %s is not in the allowed domains\n", target);
  conch_bash_result *r = run(sh, cmd);
  if (!r) return;
  CHECK(!(r->has_exit_code && r->exit_code == 0), "%s: curl fails", what);
  if (CHECK(r->sandbox_violations_count == 1 && r->sandbox_violations != NULL,
            "%s: one violation, got %zu", what, r->sandbox_violations_count)) {
    CHECK_STR(r->sandbox_violations[0], target, what);
    CHECK(r->sandbox_violations[1] == NULL, "%s: the array ends with NULL", what);
  }
  size_t n = strlen(r->output), k = strlen(line);
  CHECK(n >= k && strcmp(r->output + n - k, line) == 0, "%s: output ends with \"%s\", got \"%s\"",
        what, line, r->output);
  conch_bash_result_free(r);
}

static void test_the_policy_at_work(void) {
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/conch-c-domains-XXXXXX");
  if (!SETUP(mkdtemp(dir) != NULL, "mkdtemp")) return;
  char net[96];
  snprintf(net, sizeof net, "%s/net", dir);
  snprintf(cert, sizeof cert, "%s/cert.pem", net);
  if (SETUP(mkdir(net, 0700) == 0, "mkdir") && start_server(net)) {
    const char *const allow[] = {"registry.test", NULL};
    const char *const deny[] = {"denied.test", NULL};
    conch_domain_policy d = {allow, deny, RESOLVE};
    conch_shell *sh = domain_shell(dir, &d);
    if (CHECK(sh != NULL, "a shell with a domain policy")) {
      expect_reached(sh, "registry.test", "an allowed name");
      expect_blocked(sh, "unlisted.test", "an unlisted name");
      expect_blocked(sh, "denied.test", "a denied name");

      /* The host approves unlisted.test: the next run reaches it. */
      const char *const wider[] = {"registry.test", "unlisted.test", NULL};
      conch_domain_policy w = {wider, deny, RESOLVE};
      CHECK_RC(conch_shell_set_network(sh, CONCH_NETWORK_DOMAINS, &w), CONCH_OK, "widen");
      expect_reached(sh, "unlisted.test", "after conch_shell_set_network");
      expect_blocked(sh, "denied.test", "deny still wins");

      /* A bad list leaves the policy as it was. */
      const char *const bad[] = {"not a pattern", NULL};
      conch_domain_policy b = {bad, NULL, NULL};
      CHECK_RC(conch_shell_set_network(sh, CONCH_NETWORK_DOMAINS, &b), CONCH_ERR_INVALID_ARG,
               "a bad pattern");
      expect_error(conch_last_error(), "domains.allow[0] must be a domain pattern", "named");
      expect_reached(sh, "unlisted.test", "unchanged by a refused update");

      CHECK_RC(conch_shell_set_network(sh, CONCH_NETWORK_ALLOW, NULL), CONCH_ERR_INVALID_ARG,
               "CONCH_NETWORK_ALLOW");
      expect_error(conch_last_error(), "cannot open the whole network", "the core's words");
      CHECK_RC(conch_shell_set_network(sh, CONCH_NETWORK_DENY, NULL), CONCH_OK, "deny");
      expect_blocked(sh, "registry.test", "nothing after CONCH_NETWORK_DENY");
      CHECK_RC(conch_shell_set_network(sh, CONCH_NETWORK_DOMAINS, &d), CONCH_OK, "back");
      expect_reached(sh, "registry.test", "allowed again");
    }
    conch_shell_free(sh);
  }
  stop_server();
  remove_tree(dir);
}

static void test_fails_closed_without_landlock(void) {
  const char *const allow[] = {"registry.test", NULL};
  conch_domain_policy d = {allow, NULL, RESOLVE};
  conch_shell *sh = domain_shell("/tmp", &d);
  CHECK(sh == NULL, "no Landlock: no shell with a domain policy");
  CHECK(strstr(conch_last_error(), "the sandbox cannot be enforced") != NULL,
        "CONCH_ERR_SANDBOX_UNAVAILABLE's words");
  conch_shell_free(sh);
}

int main(void) {
  test_bad_policies_are_named();
  test_set_network_needs_a_domain_policy();
  if (kernel_enforces()) {
    test_the_policy_at_work();
  } else {
    printf("Landlock ABI < 4 (or valgrind): the policy at work is left to the run without it\n");
    test_fails_closed_without_landlock();
  }
  return check_finish();
}
