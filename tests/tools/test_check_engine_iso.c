/*
 * test_check_engine_iso.c - the conformance kit's isolation of every call
 * into the plugin (issue 20, item 3): the kit's own process never loads the
 * engine under test; a plugin that crashes, aborts or hangs in init or
 * create is refused (exit status 2) with the signal and the step named; one
 * that dies in supports() costs the cell that asked, named, and the run,
 * the table and --json go on. A crash that only damage done by several
 * earlier cases together brings about is blamed on exactly those (item 3's
 * "blamed case is wrong").
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp */

#include <stdlib.h>
#include <unistd.h>

#include "json_check.h"
#include "kit_run.h"
#include "tf_test.h"

/* The processes that loaded the plugin, from its init log ("<pid> <ppid>" lines): none
   of them may be the parent of another, i.e. only workers (children of the kit) load it. */
static void only_workers_loaded(const char *log_path)
{
    FILE *f = fopen(log_path, "r");
    assert_non_null(f);
    long pid[512], ppid[512];
    int n = 0;
    while (n < 512 && fscanf(f, "%ld %ld", &pid[n], &ppid[n]) == 2)
        n++;
    fclose(f);
    assert_true(n >= 2); /* the probe and at least one worker */
    for (int i = 0; i < n; i++) {
        assert_int_equal(ppid[i], ppid[0]); /* one parent: the kit */
        for (int k = 0; k < n; k++)
            if (pid[k] == ppid[i])
                fail_msg("process %ld loaded the plugin and started workers", pid[k]);
    }
}

static void test_kit_process_never_loads_the_plugin(void **state)
{
    (void)state;
    char log_path[] = "/tmp/tf-kit-init-XXXXXX";
    int fd = mkstemp(log_path);
    assert_true(fd >= 0);
    close(fd);
    char cmd[600], *out;
    snprintf(cmd, sizeof cmd, "env TF_WRONG_INIT_LOG=%s " KIT WRONG " --quick --skip grads",
             log_path);
    assert_int_equal(kit_run(cmd, &out), 0);
    kit_expect(out, "PASS: engine 'wrong'");
    kit_expect(out, "device 0: wrong host device"); /* described by a worker */
    only_workers_loaded(log_path);
    remove(log_path);
}

/* init crashes, aborts, hangs: exit 2, the signal and the step named. */
static void test_init_death_refused_with_step(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(kit_run("env TF_WRONG_INIT_FAULT=crash " KIT WRONG, &out), 2);
    kit_expect(out, "cannot load or instantiate engine plugin '" WRONG
                    "': the plugin crashed (SIGSEGV) while: loading engine plugin '" WRONG
                    "' (dlopen, its entry point and init)");
    assert_null(strstr(out, "PASS"));
    assert_int_equal(kit_run("env TF_WRONG_INIT_FAULT=abort " KIT WRONG " --json", &out), 2);
    kit_expect(out, "the plugin aborted (SIGABRT) while: loading engine plugin");
    assert_null(strstr(out, "{")); /* no half JSON document */
    assert_int_equal(kit_run("env TF_WRONG_INIT_FAULT=hang " KIT WRONG " --case-timeout 1", &out),
                     2);
    kit_expect(out, "the plugin gave no answer within 1 s (--case-timeout) while: loading "
                    "engine plugin");
}

/* create crashes, aborts, hangs: exit 2, the step named. */
static void test_create_death_refused_with_step(void **state)
{
    (void)state;
    char *out;
    static const char *const faults[] = {"create_crash", "create_abort", "create_hang"};
    static const char *const fates[] = {"crashed (SIGSEGV)", "aborted (SIGABRT)",
                                        "gave no answer within 1 s (--case-timeout)"};
    for (int i = 0; i < 3; i++) {
        char cmd[400], want[200];
        snprintf(cmd, sizeof cmd, KIT WRONG " --option fault=%s --case-timeout 1", faults[i]);
        assert_int_equal(kit_run(cmd, &out), 2);
        snprintf(want, sizeof want,
                 "the plugin %s while: creating an instance of engine 'wrong' (create)", fates[i]);
        kit_expect(out, want);
    }
}

/* supports() dies on one question: that cell is CRASH (or TIMEOUT), named, and the rest
   of the run is complete. */
static void test_supports_death_is_a_cell(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(kit_run(KIT WRONG " --option fault=supports_crash --skip grads", &out), 1);
    const char *r = kit_row(out, "binary/mul");
    assert_non_null(strstr(r, "CRASH SIGSEGV"));
    assert_non_null(strstr(r, "pass")); /* f64 and i32 asked afresh, and passed */
    kit_expect_failure(out, "binary/mul (f32): the engine crashed (SIGSEGV) while: asking "
                            "supports() of engine 'wrong' about binary/mul (f32, f32, f32)");
    assert_non_null(strstr(kit_row(out, "copy"), "pass")); /* later rows ran */
    kit_expect(out, "lifecycle: 4 passed");
    kit_expect(out, "FAIL: engine 'wrong': ");
    kit_expect(out, "(1 of them crashed or hung)");
    assert_int_equal(
        kit_run(KIT WRONG " --option fault=supports_abort --skip grads --dtype f64", &out), 1);
    assert_non_null(strstr(kit_row(out, "unary/neg"), "CRASH SIGABRT"));
    kit_expect_failure(out, "unary/neg (f64): the engine aborted (SIGABRT) while: asking "
                            "supports() of engine 'wrong' about unary/neg (f64, f64)");
    assert_int_equal(kit_run(KIT WRONG " --option fault=supports_hang --skip grads --dtype f64 "
                                       "--case-timeout 1 --json 2>/dev/null",
                             &out),
                     1);
    if (!json_check(out))
        fail_msg("not one JSON value:\n%s", out);
    kit_expect(out, "{\"op\": \"unary/exp\", \"cells\": {\"f64\": {\"state\": \"crash\", "
                    "\"cases\": 1, \"timeout\": true}}}");
    kit_expect(out, "unary/exp (f64): the engine gave no answer within 1 s (--case-timeout) "
                    "while: asking supports() of engine 'wrong' about unary/exp (f64, f64)");
    kit_expect(out, "\"result\": \"fail\"");
}

/* A death inside a case names the engine's call it happened in. */
static void test_death_names_the_step(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(kit_run(KIT WRONG " --option fault=crash --dtype f64 --skip grads", &out), 1);
    kit_expect(out, "binary/add (f64): the engine crashed (SIGSEGV) while: binary/add (f64) [in0 "
                    "f64[] strides [] offset 0; in1 f64[] strides [] offset 3; out f64[] strides "
                    "[] offset 0] (execute)\n");
    assert_int_equal(kit_run(KIT WRONG " --option fault=hang --dtype f64 --case-timeout 1 "
                                       "--skip grads --skip lifecycle",
                             &out),
                     1);
    kit_expect(out, "fill (f64): the engine gave no answer within 1 s (--case-timeout) while: "
                    "fill (f64) [out f64[] strides [] offset 3] (execute)\n");
    int rc = kit_run(KIT WRONG " --no-fork --option fault=crash --dtype f64 --skip grads", &out);
    assert_int_not_equal(rc, 0);
    kit_expect(out, "offset 0] (execute)\n");
}

/* A supports() that hangs whatever it is asked stops the run after three questions, each
   a TIMEOUT cell, instead of costing --case-timeout per question. */
static void test_supports_hanging_always_stops_the_run(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(kit_run(KIT WRONG " --option fault=supports_hang_all --case-timeout 1", &out),
                     1);
    const char *r = kit_row(out, "fill");
    assert_non_null(strstr(r, "TIMEOUT         TIMEOUT         TIMEOUT"));
    kit_expect_failure(out, "fill (f32): the engine gave no answer within 1 s (--case-timeout) "
                            "while: asking supports() of engine 'wrong' about fill (f32)");
    kit_expect_failure(out, "supports() gave no answer within 1 s (--case-timeout) 3 times: the "
                            "run stops, the checks from fill (i64) on did not run");
    kit_expect(out, "FAIL: engine 'wrong': ");
    assert_null(strstr(out, "lifecycle: ")); /* not run */
}

/* --no-fork asks its own instance: a supports() crash ends the kit there, naming it. */
static void test_no_fork_supports_crash_named(void **state)
{
    (void)state;
    char *out;
    int rc = kit_run(KIT WRONG " --no-fork --option fault=supports_crash --skip grads", &out);
    assert_int_not_equal(rc, 0);
    assert_int_not_equal(rc, 1);
    kit_expect(out, "the engine crashed (SIGSEGV) while: ");
}

/* fault=poison2: f64 MUL crashes only after the rank-0 and the rank-4 f32 MUL cases both
   ran, neither of them the case just before: the search names exactly those two. */
static void test_crash_blamed_on_two_damaging_cases(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(
        kit_run(KIT WRONG " --option fault=poison2 --skip grads --skip lifecycle", &out), 1);
    const char *r = kit_row(out, "binary/mul");
    assert_non_null(strstr(r, "FAIL damage"));
    assert_non_null(strstr(r, "pass")); /* f64 passes on its own */
    assert_null(strstr(r, "CRASH"));
    static const char *const culprits[] = {"[in0 f32[] strides", "[in0 f32[2,3,1,2] strides"};
    for (int i = 0; i < 2; i++) {
        char line[300];
        snprintf(line, sizeof line,
                 "binary/mul (f32): after this case and 1 more in the same process "
                 "(binary/mul (f32) %s",
                 culprits[1 - i]);
        kit_expect_failure(out, line);
        snprintf(line, sizeof line,
                 "together they damaged the process; none of them can be left out "
                 "[binary/mul (f32) %s",
                 culprits[i]);
        kit_expect(out, line);
    }
    kit_expect(out, "the engine crashed (SIGSEGV) in a later one that passes on its own "
                    "(binary/mul (f64) [in0 f64[] strides");
    /* the last case before the crash (shape 17x5) did no damage */
    assert_null(strstr(out, "f32[17,5]"));
    kit_expect(out, "failures (2):");
}

/* An engine whose memory the host cannot address (fixture devmem, option overrun=1) writes
   past the end of its output's memory: the guard elements the kit puts after every
   operand, in the same device buffer, name it; no host guard could. */
static void test_device_overrun_named(void **state)
{
    (void)state;
    char *out;
    const char *devmem = KIT TF_FIXTURE_DIR "/tenferro-engine-devmem.so --skip grads";
    char cmd[400];
    snprintf(cmd, sizeof cmd, "%s --quick", devmem);
    assert_int_equal(kit_run(cmd, &out), 0); /* without the defect it passes */
    snprintf(cmd, sizeof cmd, "%s --option overrun=1", devmem);
    assert_int_equal(kit_run(cmd, &out), 1);
    const char *r = kit_row(out, "copy");
    assert_non_null(strstr(r, "FAIL damage"));
    assert_null(strstr(r, "pass"));
    kit_expect_failure(out, "copy (f32): the engine wrote past the end of the memory of the "
                            "output (5 elements of f32): the kit's guard element 0 after it");
    kit_expect(out, "(read back through download) [in0 f32[] strides [] offset 0; out f32[] "
                    "strides [] offset 3]");
    kit_expect(out, "copy (bool): the engine wrote past the end of the memory of the output");
    assert_non_null(strstr(kit_row(out, "fill"), "pass")); /* only COPY has the defect */
    assert_null(strstr(out, "host->alloc"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kit_process_never_loads_the_plugin),
        cmocka_unit_test(test_init_death_refused_with_step),
        cmocka_unit_test(test_create_death_refused_with_step),
        cmocka_unit_test(test_supports_death_is_a_cell),
        cmocka_unit_test(test_no_fork_supports_crash_named),
        cmocka_unit_test(test_death_names_the_step),
        cmocka_unit_test(test_supports_hanging_always_stops_the_run),
        cmocka_unit_test(test_crash_blamed_on_two_damaging_cases),
        cmocka_unit_test(test_device_overrun_named),
    };
    return cmocka_run_group_tests(tests, NULL, kit_teardown);
}
