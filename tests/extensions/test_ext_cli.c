/*
 * test_ext_cli.c - `tenferro info` lists extension modules: the build
 * tree's linalg module as a loaded candidate of kind "extension" (text and
 * JSON, with the extension ABI), and the malformed fixtures as refused
 * candidates with their errors.
 */
#include <stdio.h>

#include <tenferro/extension_abi.h>

#include "json_check.h"
#include "tf_test.h"
#include "tf_test_run.h"

/* Runs `cmd`; its exit status, its stdout in *out (malloc'd). */
static int run(const char *cmd, char **out)
{
    return tf_test_run(cmd, out);
}

static void test_info_lists_linalg(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run("env -u TENFERRO_PLUGIN_PATH " TF_CLI_PATH " info --json", &out), 0);
    assert_true(json_check(out));
    const char *lin = strstr(out, "\"kind\": \"extension\", \"status\": \"loaded\", \"name\": "
                                  "\"tenferro.linalg\"");
    assert_non_null(lin);
    char abi[64];
    snprintf(abi, sizeof abi, "\"abi\": {\"major\": 1, \"minor\": %d}", TF_EXTENSION_ABI_MINOR);
    assert_non_null(strstr(lin, abi));
    snprintf(abi, sizeof abi, "\"extension_abi\": {\"major\": 1, \"minor\": %d}",
             TF_EXTENSION_ABI_MINOR);
    assert_non_null(strstr(out, abi));
    free(out);
    assert_int_equal(run("env -u TENFERRO_PLUGIN_PATH " TF_CLI_PATH " info", &out), 0);
    assert_non_null(strstr(out, "extension 'tenferro.linalg'"));
    free(out);
}

static void test_info_reports_refused_modules(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(
        run("TENFERRO_PLUGIN_PATH=" TF_EXT_FIXTURE_DIR " " TF_CLI_PATH " info --json", &out), 0);
    assert_true(json_check(out));
    assert_non_null(strstr(out, "\"error\": \"TF_ERR_PLUGIN_SYMBOL\""));
    assert_non_null(strstr(out, "\"error\": \"TF_ERR_PLUGIN_ABI\""));
    assert_non_null(strstr(out, "\"error\": \"TF_ERR_PLUGIN_STRUCT_SIZE\""));
    assert_non_null(strstr(out, "\"reason\": \"extension module '"));
    assert_non_null(strstr(out, "\"name\": \"tenferro.fixture\""));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info_lists_linalg),
        cmocka_unit_test(test_info_reports_refused_modules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
