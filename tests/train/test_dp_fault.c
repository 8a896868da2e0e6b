/*
 * test_dp_fault.c - a rank killed in the middle of data-parallel training
 * makes the others fail with a clear, typed error within a bounded time.
 *
 * The program is its own launcher: run by ctest without MPI around it, it
 * starts four copies of itself under mpirun (as root in CI, on however many
 * cores), each a worker training an MLP with tf_dp_step; at step 3 rank 2
 * kills itself with SIGKILL just before the step. Each worker prints one
 * line of what happened to it; the launcher reads them and asserts:
 *   - with `mpirun --enable-recovery` (the survivors keep running): ranks
 *     0, 1 and 3 fail that step with TF_ERR_EXTENSION of tenferro.dist,
 *     kind timeout or comm_failure, within the module's time limit (5 s
 *     here) plus a margin, with the train library's message naming the
 *     bucket's all_reduce; the next collective fails at once with `broken`;
 *     the whole job ends well before ctest's timeout;
 *   - with plain mpirun (it stops the job when a rank dies): the job ends,
 *     quickly and with a failure status, instead of hanging.
 */
#define _POSIX_C_SOURCE 200809L /* popen, setenv, clock_gettime */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tenferro/dp.h>
#include <tenferro/extension.h>

#include "train_test.h"

#define LIMIT_S 5.0 /* TENFERRO_DIST_TIMEOUT of the workers */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the worker ---- */

static tf_eager *loss_of(tf_session *s, tf_optim *opt, tf_eager *x)
{
    tf_eager *a = NULL, *b = NULL, *c = NULL, *l = NULL;
    TF_ASSERT_OK(tf_session_matmul(s, x, tf_optim_param(opt, 0), &a));
    TF_ASSERT_OK(tf_session_tanh(s, a, &b));
    TF_ASSERT_OK(tf_session_mul(s, b, b, &c));
    TF_ASSERT_OK(tf_session_reduce_mean(s, c, NULL, 0, &l));
    tf_eager_release(a);
    tf_eager_release(b);
    tf_eager_release(c);
    return l;
}

static int worker(void)
{
    tf_engine *cpu = NULL;
    tf_runtime *rt = NULL;
    tf_dp *dp = NULL;
    if (tf_engine_open("cpu", 1, &cpu) || tf_runtime_create(&rt) || tf_dp_create(rt, cpu, &dp)) {
        printf("worker: setup failed: %s\n", tf_train_error_message());
        return 2;
    }
    g_cpu = cpu;
    int r = tf_dp_rank(dp);
    double xv[12], wv[12];
    for (int k = 0; k < 12; k++) {
        xv[k] = 0.1 * k - 0.3 * r;
        wv[k] = 0.05 * k;
    }
    tf_eager *x = tft_f64(rt, 0, 2, (const int64_t[]){4, 3}, xv, 12);
    tf_eager *w = trt_param(rt, 2, (const int64_t[]){3, 4}, wv, 12);
    tf_optim *opt = NULL;
    tf_optim_options o;
    tf_optim_options_default(TF_OPTIM_ADAM, &o);
    tf_optim_create(rt, TF_OPTIM_ADAM, &opt);
    tf_optim_add_group(opt, &o, &w, 1);
    tf_eager_release(w);
    for (int step = 0; step < 10; step++) {
        tf_session *s = NULL;
        tf_session_begin(rt, cpu, &s);
        tf_eager *l = loss_of(s, opt, x);
        tf_session_end(s);
        tf_eager_backward(l, cpu);
        tf_eager_release(l);
        if (step == 3 && r == 2) {
            printf("rank 2: killing itself before step 3\n");
            fflush(stdout);
            raise(SIGKILL);
        }
        double t0 = now();
        tf_status st = tf_dp_step(dp, opt);
        if (st) {
            double waited = now() - t0;
            const char *module = "", *kind = "";
            tf_error_extension_kind(&module, &kind, NULL);
            char first[1024], which[128]; /* copied: the next failure overwrites the slots */
            snprintf(which, sizeof which, "%s/%s", module, kind);
            snprintf(first, sizeof first, "%s", tf_train_error_message());
            double t1 = now(), v;
            tf_status again = tf_dp_all_reduce_scalar(dp, 1.0, 0, &v);
            const char *kind2 = "";
            tf_error_extension_kind(NULL, &kind2, NULL);
            printf("rank %d: step %d failed after %.2f s: %s %s [%s]; then %s %s in %.3f s\n", r,
                   step, waited, tf_status_name(st), which, first, tf_status_name(again), kind2,
                   now() - t1);
            fflush(stdout);
            _exit(3); /* MPI cannot be finalised with a dead peer */
        }
    }
    printf("rank %d: finished all steps\n", r);
    return 0;
}

/* ---- the launcher ---- */

/* Runs the job; *out gets its output (at most cap bytes), returns the exit status. */
static int run_job(const char *extra, char *out, size_t cap, double *seconds)
{
    char self[512], cmd[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = '\0';
    snprintf(cmd, sizeof cmd,
             "TENFERRO_DIST_TIMEOUT=%g TF_DP_FAULT_WORKER=1 timeout -s KILL 120 %s "
             "--allow-run-as-root --oversubscribe %s -np 4 '%s' 2>&1",
             LIMIT_S, TF_MPIEXEC, extra, self);
    double t0 = now();
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t len = fread(out, 1, cap - 1, p);
    out[len] = '\0';
    int status = pclose(p);
    *seconds = now() - t0;
    return status;
}

static void test_survivors_fail_with_a_typed_error(void **state)
{
    (void)state;
    static char out[1 << 16];
    double seconds;
    run_job("--enable-recovery", out, sizeof out, &seconds);
    fputs(out, stdout);
    assert_non_null(strstr(out, "rank 2: killing itself before step 3"));
    for (int r = 0; r < 4; r++) {
        if (r == 2)
            continue;
        char head[64];
        snprintf(head, sizeof head, "rank %d: step 3 failed after ", r);
        const char *line = strstr(out, head);
        if (!line)
            fail_msg("rank %d printed no failure of step 3", r);
        double waited = atof(line + strlen(head));
        assert_true(waited < LIMIT_S + 10);
        const char *eol = strchr(line, '\n');
        char text[1024];
        snprintf(text, sizeof text, "%.*s", eol ? (int)(eol - line) : 1000, line);
        assert_non_null(strstr(text, "TF_ERR_EXTENSION tenferro.dist/"));
        assert_true(strstr(text, "tenferro.dist/timeout [") ||
                    strstr(text, "tenferro.dist/comm_failure ["));
        assert_non_null(strstr(text, "all_reduce"));
        assert_non_null(strstr(text, "then TF_ERR_EXTENSION broken"));
    }
    assert_true(seconds < 90);
}

static void test_plain_mpirun_stops_the_job(void **state)
{
    (void)state;
    static char out[1 << 16];
    double seconds;
    int status = run_job("", out, sizeof out, &seconds);
    fputs(out, stdout);
    assert_int_not_equal(status, 0);
    assert_null(strstr(out, "finished all steps"));
    assert_true(seconds < 90);
}

int main(void)
{
    if (getenv("TF_DP_FAULT_WORKER"))
        return worker();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_survivors_fail_with_a_typed_error),
        cmocka_unit_test(test_plain_mpirun_stops_the_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
