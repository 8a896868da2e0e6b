/*
 * test_mutants.c - the conformance kit's mutation score.
 *
 * Every mutant of tests/sdk/mutants.txt is the SDK's engine template with
 * one change (a swapped operator or constant, an off-by-one stride, a
 * dropped batch axis, a zero of the wrong sign, a missing error return, a
 * leak, ...), built by tests/sdk/CMakeLists.txt. `tenferro check-engine`
 * runs on each, two at a time; a mutant is killed when the kit fails it
 * (exit 1, or 2 for one that no longer loads). The template itself must
 * pass. A mutant marked `killed` that survives is a hole in the kit; one
 * marked `equivalent` (with the reason no check can tell it from the
 * template) that is killed means the kit fails a correct engine, or the
 * reason is wrong: both fail the test. The score is printed:
 *   mutation score: K of N mutants killed (E more are equivalent: ...)
 */
#define _GNU_SOURCE /* posix_spawn's file actions, mkdtemp */

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tf_test.h"
#include "tf_test_run.h"

extern char **environ;

#define MAX_MUTANTS 200
#define PARALLEL 2

typedef struct mutant {
    char id[64];
    char what[256];
    int equivalent; /* expect: equivalent: ... */
    char why[600];  /* its reason */
    int status;     /* the kit's exit status, -1 for a signal */
    char log[128];  /* the kit's output */
} mutant;

static mutant g_m[MAX_MUTANTS];
static int g_n;
static char g_logs[] = "/tmp/tf-mutants-XXXXXX";

/* The value of "key: " on the line at p (up to the end of the line) into out. */
static void take(const char *p, const char *key, char *out, size_t cap)
{
    size_t k = strlen(key);
    if (strncmp(p, key, k) != 0)
        return;
    p += k;
    size_t n = strcspn(p, "\n");
    snprintf(out, cap, "%.*s", (int)n, p);
}

static void read_spec(void)
{
    FILE *f = fopen(TF_MUTANTS_SPEC, "r");
    assert_non_null(f);
    char line[2048];
    mutant *m = NULL;
    char expect[590] = "";
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "@mutant ", 8) == 0) {
            assert_true(g_n < MAX_MUTANTS);
            m = &g_m[g_n++];
            memset(m, 0, sizeof *m);
            take(line, "@mutant ", m->id, sizeof m->id);
            expect[0] = '\0';
        } else if (m && strncmp(line, "@end", 4) == 0) {
            if (strcmp(expect, "killed") == 0) {
                m->equivalent = 0;
            } else if (strncmp(expect, "equivalent: ", 12) == 0 && expect[12]) {
                m->equivalent = 1;
                snprintf(m->why, sizeof m->why, "%s", expect + 12);
            } else {
                fail_msg("mutant %s: expect: is neither 'killed' nor 'equivalent: <why>'", m->id);
            }
            m = NULL;
        } else if (m) {
            take(line, "what: ", m->what, sizeof m->what);
            take(line, "expect: ", expect, sizeof expect);
        }
    }
    fclose(f);
    assert_true(g_n > 0);
}

/* Starts the kit on `plugin`, its output into `log`. */
static pid_t start_kit(const char *plugin, const char *log)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    char *argv[] = {(char *)TF_CLI_PATH, (char *)"check-engine", (char *)plugin, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, TF_CLI_PATH, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        fail_msg("cannot start %s: %s", TF_CLI_PATH, strerror(rc));
    return pid;
}

static int exit_of(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs the kit on every mutant, PARALLEL at a time. */
static void run_all(void)
{
    pid_t pids[PARALLEL] = {0};
    int which[PARALLEL];
    int next = 0, running = 0;
    while (next < g_n || running) {
        for (int s = 0; s < PARALLEL && next < g_n; s++) {
            if (pids[s])
                continue;
            mutant *m = &g_m[next];
            char plugin[512];
            snprintf(plugin, sizeof plugin, "%s/%s/tenferro-engine-example.so", TF_MUTANTS_DIR,
                     m->id);
            char log[sizeof m->log];
            snprintf(log, sizeof log, "%s/%s.txt", g_logs, m->id);
            memcpy(m->log, log, sizeof log);
            pids[s] = start_kit(plugin, m->log);
            which[s] = next++;
            running++;
        }
        int status;
        pid_t done = waitpid(-1, &status, 0);
        if (done < 0 && errno == EINTR)
            continue;
        assert_true(done > 0);
        for (int s = 0; s < PARALLEL; s++)
            if (pids[s] == done) {
                g_m[which[s]].status = exit_of(status);
                pids[s] = 0;
                running--;
            }
    }
}

/* The FAIL and failure lines of a kit log, for a mutant that came out wrong. */
static void print_log(const char *log)
{
    FILE *f = fopen(log, "r");
    char line[4096];
    int shown = 0;
    while (f && fgets(line, sizeof line, f) && shown < 12)
        if (strstr(line, "FAIL") || strstr(line, "CRASH") || strstr(line, "TIMEOUT")) {
            print_message("      %s", line);
            shown++;
        }
    if (f)
        fclose(f);
}

static void test_template_passes(void **state)
{
    (void)state;
    char *out = NULL;
    int rc = tf_test_run(TF_CLI_PATH " check-engine " TF_TEMPLATE_PLUGIN " 2>&1", &out);
    if (rc != 0)
        fail_msg("the unchanged template fails the kit (exit %d):\n%s", rc, out);
    assert_non_null(strstr(out, "PASS: engine 'example'"));
    free(out);
}

static void test_mutation_score(void **state)
{
    (void)state;
    read_spec();
    assert_non_null(mkdtemp(g_logs));
    run_all();
    int killed = 0, live = 0, equivalent = 0, wrong = 0;
    for (int i = 0; i < g_n; i++) {
        mutant *m = &g_m[i];
        int dead = m->status == 1 || m->status == 2;
        if (m->status != 0 && !dead) {
            print_message("  %-28s the kit itself ended abnormally (status %d)\n", m->id,
                          m->status);
            print_log(m->log);
            wrong++;
        } else if (m->equivalent) {
            equivalent++;
            if (dead) {
                print_message("  %-28s KILLED, yet listed as equivalent (%s): %s\n", m->id, m->why,
                              m->what);
                print_log(m->log);
                wrong++;
            }
        } else {
            live++;
            killed += dead;
            if (!dead) {
                print_message("  %-28s SURVIVED: %s\n", m->id, m->what);
                wrong++;
            }
        }
    }
    print_message("mutation score: %d of %d mutants killed (%d more are equivalent, each "
                  "explained in mutants.txt)\n",
                  killed, live, equivalent);
    for (int i = 0; i < g_n; i++)
        if (g_m[i].equivalent)
            print_message("  equivalent %s: %s\n", g_m[i].id, g_m[i].why);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_logs);
    if (wrong == 0)
        assert_int_equal(system(cmd), 0); /* the logs stay for a failing run */
    else
        fail_msg("%d mutant(s) came out other than mutants.txt says (kit logs in %s)", wrong,
                 g_logs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_passes),
        cmocka_unit_test(test_mutation_score),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
