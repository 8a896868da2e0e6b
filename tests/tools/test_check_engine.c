/*
 * test_check_engine.c - `tenferro check-engine`, the conformance kit, run for
 * real: it passes the CPU engine (every primitive in the table) and the
 * Vulkan engine where that is built; passes a correct engine that claims only
 * a subset of the primitives; fails, naming the op, dtype and case, each
 * defect of the `wrong` fixture engine (a crash or a hang too, naming the
 * case it was running); and exits 2, with the loader's
 * status and message, when the plugin cannot be loaded or the command line
 * is wrong.
 */

#include <signal.h>

#include "json_check.h"
#include "tf_test.h"
#include "tf_test_run.h"

#define KIT "env -u TENFERRO_PLUGIN_PATH " TF_CLI_PATH " check-engine "
#define WRONG TF_FIXTURE_DIR "/tenferro-engine-wrong.so"

/* The last command's output; kept here so that a failing assertion (which leaves the
   test by longjmp) leaks nothing: the next run or the group teardown frees it. */
static char *g_out;

/* Runs `cmd` (stderr joined to stdout), returns its exit status and output (in g_out). */
static int run(const char *cmd, char **out)
{
    free(g_out);
    g_out = NULL;
    char full[1024];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    int status = tf_test_run(full, &g_out);
    *out = g_out;
    return status;
}

static void expect(const char *out, const char *text)
{
    if (!strstr(out, text))
        fail_msg("expected \"%s\" in the output:\n%s", text, out);
}

/* The table row starting with `row`, up to its end of line (static buffer). */
static const char *row_of(const char *out, const char *row)
{
    static char line[256];
    char key[64];
    snprintf(key, sizeof key, "\n  %s ", row);
    const char *p = strstr(out, key);
    if (!p)
        fail_msg("no table row '%s' in:\n%s", row, out);
    p += 3;
    size_t n = strcspn(p, "\n");
    snprintf(line, sizeof line, "%.*s", (int)n, p);
    return line;
}

static int teardown(void **state)
{
    (void)state;
    free(g_out);
    g_out = NULL;
    return 0;
}

#ifdef TF_CHECK_VULKAN

/* Built as its own program (test_check_engine_vulkan, label vulkan) where the engine is. */
static void test_vulkan_passes(void **state)
{
    (void)state;
    char *out;
    int rc = run(KIT "vulkan", &out);
    if (rc == 2 && strstr(out, "cannot create an instance")) {
        print_message("no Vulkan device: %s\n", out);
        skip();
    }
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    expect(out, "PASS: engine 'vulkan'");
    assert_non_null(strstr(row_of(out, "dot_general"), "pass"));
}

#else

static void test_cpu_passes_every_primitive(void **state)
{
    (void)state;
    char *out;
    int rc = run(KIT "cpu", &out);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    static const char *const rows[] = {"fill",
                                       "iota",
                                       "unary/exp",
                                       "unary/logical_not",
                                       "binary/pow",
                                       "binary/xor",
                                       "compare/ne",
                                       "select",
                                       "convert/from f64",
                                       "convert.checked/from i64",
                                       "reduce/prod",
                                       "dot_general",
                                       "copy",
                                       "pad",
                                       "concatenate",
                                       "gather/index_select",
                                       "gather/along_axis",
                                       "scatter/along_axis,replace",
                                       "dynamic_slice",
                                       "dynamic_update_slice",
                                       "fused",
                                       "fused/outputs"};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *r = row_of(out, rows[i]);
        assert_non_null(strstr(r, "pass"));
        assert_null(strstr(r, "FAIL"));
        assert_null(strstr(r, "unsup"));
    }
    /* cells the ABI leaves undefined are marked so, not run */
    assert_non_null(strstr(row_of(out, "unary/logical_not"), "-"));
    /* the "fused" rows above: random programs of one output and of several (ABI 1.3),
       compared with their steps run one by one */
    assert_null(strstr(row_of(out, "fused"), "ERR"));
    assert_null(strstr(row_of(out, "fused/outputs"), "ERR"));
    expect(out, "gradients: 32 passed");
    expect(out, "lifecycle: 4 passed");
    expect(out, "PASS: engine 'cpu'");
    assert_null(strstr(out, "failures"));
}

/* An engine that claims FUSED of one output but not of several (ABI 1.3 lets it): those
   cells are unsupported and refused, not failed. */
static void test_fused_one_output_engine_passes(void **state)
{
    (void)state;
    char *out;
    int rc = run(KIT "cpu --option fused=one --skip grads --skip lifecycle", &out);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    assert_non_null(strstr(row_of(out, "fused"), "pass"));
    assert_null(strstr(row_of(out, "fused"), "unsup"));
    const char *r = row_of(out, "fused/outputs");
    assert_non_null(strstr(r, "unsup"));
    assert_null(strstr(r, "pass"));
    assert_null(strstr(r, "FAIL"));
    expect(out, "PASS: engine 'cpu'");
    expect(out, "refused as they must be: 2)");
}

static void test_subset_engine_passes(void **state)
{
    (void)state;
    char *out;
    int rc = run(KIT WRONG, &out);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    /* claimed cells pass, the rest are unsupported and were refused */
    const char *r = row_of(out, "binary/mul");
    assert_non_null(strstr(r, "pass"));
    assert_non_null(strstr(r, "unsup"));
    assert_non_null(strstr(row_of(out, "dot_general"), "unsup"));
    /* an engine without FUSED: its programs are refused, and that is no failure */
    assert_non_null(strstr(row_of(out, "fused"), "unsup"));
    assert_non_null(strstr(row_of(out, "fused/outputs"), "unsup"));
    expect(out, "PASS: engine 'wrong'");
    expect(out, "refused as they must be: ");
    assert_null(strstr(out, "refused as they must be: 0)"));
}

static void test_wrong_values_named(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run(KIT WRONG " --option fault=mul_f32", &out), 1);
    assert_non_null(strstr(row_of(out, "binary/mul"), "FAIL"));
    assert_null(strstr(row_of(out, "binary/add"), "FAIL"));
    /* the detail names the op, dtype, element, both values and the case's layout */
    expect(out, "binary/mul (f32): wrong result at element [");
    expect(out, "got ");
    expect(out, ", expected ");
    expect(out, "strides [");
    expect(out, "FAIL: engine 'wrong'");
}

static void test_claimed_but_failing_named(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run(KIT WRONG " --option fault=exp_fails", &out), 1);
    assert_non_null(strstr(row_of(out, "unary/exp"), "ERR BACKEND"));
    expect(out, "unary/exp (f64): the engine returned TF_ERR_BACKEND");
    expect(out, "exp kernel missing (injected defect)");
}

static void test_write_outside_view_named(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run(KIT WRONG " --option fault=fill_outside --dtype i32", &out), 1);
    expect(out, "fill (i32): wrong result at memory element ");
    expect(out, "outside the output view");
}

static void test_input_write_named(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run(KIT WRONG " --option fault=clobber --dtype f64 --skip grads", &out), 1);
    assert_non_null(strstr(row_of(out, "copy"), "FAIL"));
    expect(out, "copy (f64): the engine wrote into input 0 (read-only) at element [");
}

static void test_greedy_supports_named(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run(KIT WRONG " --option fault=greedy --skip prims --skip grads", &out), 1);
    expect(out, "supports() claims an unknown primitive (17); it must answer 0");
}

static void test_json_form(void **state)
{
    (void)state;
    char *out;
    /* stdout only: the JSON object must be all of it */
    assert_int_equal(run(KIT WRONG " --option fault=mul_f32 --quick --json 2>/dev/null", &out), 1);
    if (!json_check(out))
        fail_msg("not one JSON value:\n%s", out);
    expect(out, "\"engine\": {\"name\": \"wrong\", \"version\": \"0.1.0\", \"file\": \"");
    expect(out, "{\"op\": \"binary/mul\", \"cells\": {\"f32\": {\"state\": \"fail\", "
                "\"cases\": ");
    expect(out, "\"max_abs_error\": ");
    expect(out, "\"i64\": {\"state\": \"unsup\", \"cases\": 0}, \"bool\": {\"state\": "
                "\"n/a\", \"cases\": 0}}}");
    expect(out, "\"failures\": [\n    \"binary/mul (f32): wrong result at element [");
    expect(out, "\"failed\": 1,");
    expect(out, "\"result\": \"fail\"");
    assert_int_equal(run(KIT "cpu --quick --json --skip grads 2>/dev/null", &out), 0);
    assert_true(json_check(out));
    expect(out, "\"failures\": [],");
    expect(out, "\"gradients\": [],");
    expect(out, "\"result\": \"pass\"");
    assert_null(strstr(out, "\"state\": \"fail\""));
}

static void test_crash_and_hang_named(void **state)
{
    (void)state;
    char *out;
    /* the kit dies of the engine's signal after naming the case (the shell popen runs
       reports that as 128 + the signal, or passes the signal on) */
    int rc = run(KIT WRONG " --option fault=crash --dtype f64", &out);
    if (rc != 128 + SIGSEGV && rc != -1)
        fail_msg("exit %d, expected death by SIGSEGV:\n%s", rc, out);
    expect(out, "the engine crashed (SIGSEGV) while: binary/add (f64) [in0 f64");
    /* fill is the first row: the generous limit leaves the plugins time to load */
    assert_int_equal(run(KIT WRONG " --option fault=hang --dtype f64 --timeout 10", &out), 1);
    expect(out, "timed out (--timeout) while: fill (f64) [out f64");
}

static void test_unloadable_plugins_exit_2(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run(KIT "no-such-engine", &out), 2);
    expect(out, "cannot load engine plugin 'no-such-engine': TF_ERR_PLUGIN_NOT_FOUND");
    assert_null(strstr(out, "PASS"));
    assert_int_equal(run(KIT TF_FIXTURE_DIR "/tenferro-engine-bad-major.so", &out), 2);
    expect(out, "TF_ERR_PLUGIN_ABI");
    assert_int_equal(run(KIT TF_FIXTURE_DIR "/tenferro-engine-notelf.so", &out), 2);
    expect(out, "TF_ERR_PLUGIN_LOAD");
    /* an engine that loads but refuses its options */
    assert_int_equal(run(KIT WRONG " --option fault=bogus", &out), 2);
    expect(out, "cannot create an instance of engine");
    expect(out, "got 'bogus'");
    assert_int_equal(run(KIT "cpu --reference no-such-reference", &out), 2);
    expect(out, "cannot load the reference engine 'no-such-reference'");
}

static void test_usage(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run(KIT "--help", &out), 0);
    expect(out, "usage: tenferro check-engine");
    static const char *const bad[] = {"",
                                      "cpu vulkan",
                                      "--dtype f16 cpu",
                                      "--dtype cpu",
                                      "--bogus cpu",
                                      "--option novalue cpu",
                                      "--skip all cpu",
                                      "--threads -1 cpu",
                                      "--threads 2000 cpu",
                                      "--threads 4x cpu",
                                      "--timeout soon cpu"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, KIT "%s", bad[i]);
        int rc = run(cmd, &out);
        if (rc != 2)
            fail_msg("'%s' exited %d, expected 2:\n%s", bad[i], rc, out);
        expect(out, "usage: tenferro check-engine");
    }
}

static void test_dtype_filter(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run(KIT "cpu --quick --dtype f64,bool --skip grads", &out), 0);
    const char *header = row_of(out, "op");
    assert_non_null(strstr(header, "f64"));
    assert_non_null(strstr(header, "bool"));
    assert_null(strstr(header, "f32"));
    assert_null(strstr(header, "i32"));
    assert_null(strstr(out, "gradients"));
}

/* Plugins whose device_info lies (issue 19, items 2 and 6): the kit names the strings
   without a NUL as failures and asks only the first 64 of 10^8 devices. */
static void test_hostile_device_info(void **state)
{
    (void)state;
    char *out;
    const char *skip = " --skip prims --skip grads --skip lifecycle --verbose";
    char cmd[512];
    snprintf(cmd, sizeof cmd, KIT TF_FIXTURE_DIR "/hostile/tenferro-engine-unterminated.so%s",
             skip);
    assert_int_equal(run(cmd, &out), 1);
    expect(out, "device 0: unavailable: plugin_device_info: engine 'unterminated'");
    expect(out, "FAIL  device_info(0) of 2 devices failed: TF_ERR_BACKEND");
    expect(out, "'name' without a terminating NUL");
    expect(out, "FAIL  device_info(1) of 2 devices failed: TF_ERR_BACKEND");
    expect(out, "'driver' without a terminating NUL");
    assert_null(strstr(out, "NNNNNNNN"));
    snprintf(cmd, sizeof cmd, KIT TF_FIXTURE_DIR "/hostile/tenferro-engine-many-devices.so%s",
             skip);
    assert_int_equal(run(cmd, &out), 0);
    expect(out, "descriptor and the first 64 of 100000000 device(s) described");
}

#endif /* TF_CHECK_VULKAN */

int main(void)
{
#ifdef TF_CHECK_VULKAN
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_vulkan_passes)};
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_passes_every_primitive),
        cmocka_unit_test(test_subset_engine_passes),
        cmocka_unit_test(test_fused_one_output_engine_passes),
        cmocka_unit_test(test_wrong_values_named),
        cmocka_unit_test(test_claimed_but_failing_named),
        cmocka_unit_test(test_write_outside_view_named),
        cmocka_unit_test(test_input_write_named),
        cmocka_unit_test(test_greedy_supports_named),
        cmocka_unit_test(test_json_form),
        cmocka_unit_test(test_crash_and_hang_named),
        cmocka_unit_test(test_unloadable_plugins_exit_2),
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_dtype_filter),
        cmocka_unit_test(test_hostile_device_info),
    };
#endif
    return cmocka_run_group_tests(tests, NULL, teardown);
}
