/*
 * test_bench.c - `tenferro bench --quick` (and the limits program of bench/,
 * when built) run for real, so that the bench cannot rot: every stdout line
 * is `<workload> <metric> <value> <unit>` with a finite number, every
 * expected figure is there, a workload list selects, the extra workloads
 * (gemm, elementwise_f32, complex, growth) run only when named, bad arguments exit
 * with 2.
 * Timings are never asserted.
 *
 * Built with TF_BENCH_VULKAN (the program test_bench_vulkan, label vulkan)
 * it runs every workload on the Vulkan engine instead, whose work completes
 * asynchronously: the figures must come out just the same.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r */

#include <math.h>

#include "tf_test.h"
#include "tf_test_run.h"

/* Runs `cmd`; its exit status, its stdout in *out (malloc'd). */
static int run(const char *cmd, char **out)
{
    return tf_test_run(cmd, out);
}

static const char *const k_units[] = {"ns", "ms", "MiB", "GFLOP/s", "TFLOP/s"};

static const char *const k_workloads[] = {
    "dispatch", "mlp",         "elementwise", "matmul", "gemm",
    "elementwise_f32", "complex", "transformer", "svd_grad", "growth"};

/*
 * Checks one line: exactly four fields separated by single spaces, the
 * workload (after `prefix`) a known one, a finite value, a known unit.
 * Returns the line's "<workload> <metric> <unit>" key in `key`.
 */
static void check_line(const char *line, const char *prefix, char *key, size_t key_size)
{
    char copy[256], *fields[5] = {NULL}, *save = NULL;
    assert_true(strlen(line) > 0 && strlen(line) < sizeof copy);
    assert_null(strstr(line, "  "));
    assert_true(line[0] != ' ' && line[strlen(line) - 1] != ' ');
    strcpy(copy, line);
    int n = 0;
    for (char *tok = strtok_r(copy, " ", &save); tok && n < 5; tok = strtok_r(NULL, " ", &save))
        fields[n++] = tok;
    if (n != 4)
        fail_msg("not 4 fields: '%s'", line);
    size_t plen = strlen(prefix);
    assert_int_equal(strncmp(fields[0], prefix, plen), 0);
    const char *workload = fields[0] + plen;
    int workload_ok = 0;
    for (size_t i = 0; i < sizeof k_workloads / sizeof k_workloads[0]; i++)
        workload_ok |= strcmp(workload, k_workloads[i]) == 0;
    if (!workload_ok)
        fail_msg("unknown workload: '%s'", line);
    char *end = NULL;
    double value = strtod(fields[2], &end);
    if (end == fields[2] || *end != '\0' || !isfinite(value))
        fail_msg("not a finite number: '%s'", line);
    int unit_ok = 0;
    for (size_t i = 0; i < sizeof k_units / sizeof k_units[0]; i++)
        unit_ok |= strcmp(fields[3], k_units[i]) == 0;
    if (!unit_ok)
        fail_msg("unknown unit: '%s'", line);
    snprintf(key, key_size, "%s %s %s", workload, fields[1], fields[3]);
}

/* Checks every line of `out` and that each of `expected` keys occurs exactly once. */
static void check_output(char *out, const char *prefix, const char *const *expected,
                         size_t n_expected)
{
    int seen[32] = {0};
    size_t lines = 0;
    char *save = NULL;
    assert_true(n_expected <= 32);
    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char key[256];
        check_line(line, prefix, key, sizeof key);
        size_t i = 0;
        while (i < n_expected && strcmp(key, expected[i]) != 0)
            i++;
        if (i == n_expected)
            fail_msg("unexpected figure: '%s'", line);
        seen[i]++;
        lines++;
    }
    for (size_t i = 0; i < n_expected; i++)
        if (seen[i] != 1)
            fail_msg("figure '%s' printed %d times", expected[i], seen[i]);
    assert_int_equal(lines, n_expected);
}

static const char *const k_bench_figures[] = {
    "dispatch forward_per_op ns",
    "dispatch backward_per_op ns",
    "dispatch peak_rss MiB",
    "mlp step ms",
    "mlp rss_growth MiB",
    "mlp peak_rss MiB",
    "elementwise fwd_bwd ms",
    "elementwise peak_rss MiB",
    "matmul f64_16_fwd_bwd_gflops GFLOP/s",
    "matmul f32_16_fwd_bwd_gflops GFLOP/s",
    "matmul peak_rss MiB",
};

static const char *const k_extra_figures[] = {
    "gemm f32_16_tflops TFLOP/s",
    "gemm peak_rss MiB",
    "elementwise_f32 fwd_bwd ms",
    "elementwise_f32 peak_rss MiB",
    "complex c128_16_fwd_bwd_gflops GFLOP/s",
    "complex elementwise_fwd_bwd ms",
    "complex peak_rss MiB",
};

#ifndef TF_BENCH_VULKAN

/* The real-model workloads (bench_models.c), standard on the CPU engine. */
static const char *const k_model_figures[] = {
    "transformer step ms",
    "transformer peak_rss MiB",
    "svd_grad fwd_bwd ms",
    "svd_grad peak_rss MiB",
};

static const char *const k_growth_figures[] = {
    "growth mul_1_ns ns",          "growth mul_4_ns ns",          "growth mul_16_ns ns",
    "growth mul_64_ns ns",         "growth mul_256_ns ns",        "growth mul_1024_ns ns",
    "growth matmul_16_gflops GFLOP/s", "growth matmul_32_gflops GFLOP/s",
    "growth matmul_64_gflops GFLOP/s", "growth peak_rss MiB",
};

/* Without a workload named: the six standard ones, never the extra ones. */
static void test_bench_quick_format(void **state)
{
    (void)state;
    const size_t nb = sizeof k_bench_figures / sizeof k_bench_figures[0];
    const size_t nm = sizeof k_model_figures / sizeof k_model_figures[0];
    const char *expected[nb + nm];
    for (size_t i = 0; i < nb; i++)
        expected[i] = k_bench_figures[i];
    for (size_t i = 0; i < nm; i++)
        expected[nb + i] = k_model_figures[i];
    char *out;
    assert_int_equal(run(TF_CLI_PATH " bench --quick 2>/dev/null", &out), 0);
    check_output(out, "", expected, nb + nm);
    free(out);
}

/* growth: mul from 1 to 2^10 elements and matmul from 16 to 64 at --quick. */
static void test_bench_growth_quick_format(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run(TF_CLI_PATH " bench --quick growth 2>/dev/null", &out), 0);
    check_output(out, "", k_growth_figures, sizeof k_growth_figures / sizeof k_growth_figures[0]);
    free(out);
}

static void test_bench_extra_quick_format(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(
        run(TF_CLI_PATH " bench --quick --engine cpu elementwise_f32 gemm complex 2>/dev/null", &out),
        0);
    check_output(out, "", k_extra_figures, sizeof k_extra_figures / sizeof k_extra_figures[0]);
    free(out);
}

/* --gemm-n sets gemm's size, which the metric's name carries. */
static void test_bench_gemm_size(void **state)
{
    (void)state;
    static const char *const figures[] = {"gemm f32_24_tflops TFLOP/s", "gemm peak_rss MiB"};
    char *out;
    assert_int_equal(run(TF_CLI_PATH " bench --quick --gemm-n 24 gemm 2>/dev/null", &out), 0);
    check_output(out, "", figures, sizeof figures / sizeof figures[0]);
    free(out);
}

static void test_bench_selects_workloads(void **state)
{
    (void)state;
    static const char *const figures[] = {"elementwise fwd_bwd ms", "elementwise peak_rss MiB",
                                          "dispatch forward_per_op ns",
                                          "dispatch backward_per_op ns", "dispatch peak_rss MiB"};
    char *out;
    assert_int_equal(
        run(TF_CLI_PATH " bench --threads 2 --quick elementwise dispatch 2>/dev/null", &out), 0);
    check_output(out, "", figures, sizeof figures / sizeof figures[0]);
    free(out);
}

/* --list: every workload once, one a line, "NAME standard|extra" (bench/run.sh reads it);
   the standard ones are the six of BENCHMARKS.md, in the bench's order. */
static void test_bench_list(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run(TF_CLI_PATH " bench --list", &out), 0);
    assert_string_equal(out, "dispatch standard\nmlp standard\nelementwise standard\n"
                             "matmul standard\ntransformer standard\nsvd_grad standard\n"
                             "gemm extra\nelementwise_f32 extra\ncomplex extra\ngrowth extra\n"
                             "dp extra\ncheckpoint extra\neinsum_path extra\neinsum_tn extra\n");
    free(out);
    /* --list with anything else is a usage error, nothing runs */
    assert_int_equal(run(TF_CLI_PATH " bench --list dispatch 2>/dev/null", &out), 2);
    assert_string_equal(out, "");
    free(out);
}

/* --defer sets the session's deferred-chains mode, which stderr names. */
static void test_bench_defer_modes(void **state)
{
    (void)state;
    static const char *const figures[] = {"elementwise fwd_bwd ms", "elementwise peak_rss MiB"};
    static const char *const modes[] = {"off", "auto", "always"};
    for (size_t i = 0; i < 3; i++) {
        char cmd[256], want[64], *out;
        snprintf(cmd, sizeof cmd, TF_CLI_PATH " bench --quick --defer %s elementwise 2>/dev/null",
                 modes[i]);
        assert_int_equal(run(cmd, &out), 0);
        check_output(out, "", figures, sizeof figures / sizeof figures[0]);
        free(out);
        snprintf(cmd, sizeof cmd,
                 TF_CLI_PATH " bench --quick --defer %s elementwise 2>&1 >/dev/null", modes[i]);
        assert_int_equal(run(cmd, &out), 0);
        snprintf(want, sizeof want, "deferred chains %s\n", modes[i]);
        assert_non_null(strstr(out, want));
        free(out);
    }
}

static void test_bench_usage_errors(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run(TF_CLI_PATH " bench --quick no-such-workload 2>/dev/null", &out), 2);
    assert_string_equal(out, "");
    free(out);
    assert_int_equal(run(TF_CLI_PATH " bench --threads 2>/dev/null", &out), 2);
    free(out);
    assert_int_equal(run(TF_CLI_PATH " bench --quick --engine no-such-engine 2>/dev/null", &out),
                     1);
    free(out);
    /* --gemm-n needs 1 <= N <= 65536, --threads 0 <= N <= 1024 (as demo's and
       check-engine's); nothing runs on a usage error */
    static const char *const bad[] = {"--gemm-n '0' gemm",     "--gemm-n '-4' gemm",
                                      "--gemm-n '65537' gemm", "--gemm-n 'x' gemm",
                                      "--gemm-n '' gemm",      "--gemm-n '12abc' gemm",
                                      "--threads -3 dispatch", "--threads many dispatch",
                                      "--threads 4x dispatch", "--threads 2000 dispatch"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, TF_CLI_PATH " bench --quick %s 2>/dev/null", bad[i]);
        assert_int_equal(run(cmd, &out), 2);
        assert_string_equal(out, "");
        free(out);
    }
    assert_int_equal(run(TF_CLI_PATH " bench --quick gemm --gemm-n 2>/dev/null", &out), 2);
    assert_string_equal(out, "");
    free(out);
    assert_int_equal(run(TF_CLI_PATH " bench --quick --defer sometimes elementwise 2>/dev/null",
                         &out),
                     2);
    assert_string_equal(out, "");
    free(out);
}

#else /* TF_BENCH_VULKAN */

/* Every workload, standard and extra, on the Vulkan engine. */
static void test_bench_vulkan_quick_format(void **state)
{
    (void)state;
    const char *expected[sizeof k_bench_figures / sizeof k_bench_figures[0] +
                         sizeof k_extra_figures / sizeof k_extra_figures[0]];
    size_t n = 0;
    for (size_t i = 0; i < sizeof k_bench_figures / sizeof k_bench_figures[0]; i++)
        expected[n++] = k_bench_figures[i];
    for (size_t i = 0; i < sizeof k_extra_figures / sizeof k_extra_figures[0]; i++)
        expected[n++] = k_extra_figures[i];
    char *out;
    assert_int_equal(run(TF_CLI_PATH " bench --quick --engine vulkan dispatch mlp elementwise "
                                     "matmul gemm elementwise_f32 complex 2>/dev/null",
                         &out),
                     0);
    check_output(out, "", expected, n);
    free(out);
}

#endif /* TF_BENCH_VULKAN */

#if defined(TF_LIMITS_PATH) && !defined(TF_BENCH_VULKAN)
static void test_limits_quick_format(void **state)
{
    (void)state;
    static const char *const figures[] = {
        "matmul f64_16_fwd_bwd_gflops GFLOP/s", "matmul f32_16_fwd_bwd_gflops GFLOP/s",
        "elementwise fwd_bwd ms", "elementwise fwd_bwd_2grads ms", "mlp step ms",
        "svd_grad fwd_bwd ms", "complex c128_16_fwd_bwd_gflops GFLOP/s", "transformer step ms"};
    char *out;
    assert_int_equal(run(TF_LIMITS_PATH " --threads 2 --quick 2>/dev/null", &out), 0);
    check_output(out, "limit:", figures, sizeof figures / sizeof figures[0]);
    free(out);
    /* --list: the workloads it has limits for, one a line (bench/run.sh reads it) */
    assert_int_equal(run(TF_LIMITS_PATH " --list", &out), 0);
    assert_string_equal(out, "elementwise\nmlp\nmatmul\ncomplex\nsvd_grad\ntransformer\n");
    free(out);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
#ifndef TF_BENCH_VULKAN
        cmocka_unit_test(test_bench_quick_format),  cmocka_unit_test(test_bench_extra_quick_format),
        cmocka_unit_test(test_bench_growth_quick_format),
        cmocka_unit_test(test_bench_gemm_size),     cmocka_unit_test(test_bench_selects_workloads),
        cmocka_unit_test(test_bench_defer_modes),
        cmocka_unit_test(test_bench_list),
        cmocka_unit_test(test_bench_usage_errors),
#ifdef TF_LIMITS_PATH
        cmocka_unit_test(test_limits_quick_format),
#endif
#else
        cmocka_unit_test(test_bench_vulkan_quick_format),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
