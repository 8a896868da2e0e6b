/*
 * test_ext_cli.c - `tenferro info` lists extension modules: the build
 * tree's linalg module as a loaded candidate of kind "extension" (text and
 * JSON, with the extension ABI), and the malformed fixtures as refused
 * candidates with their errors.
 */
#define _POSIX_C_SOURCE 200809L /* popen, pclose */

#include <sys/wait.h>

#include "json_check.h"
#include "tf_test.h"

/* Runs `cmd`; returns its exit status and its stdout in a malloc'd string. */
static int run(const char *cmd, char **out)
{
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap);
    assert_non_null(buf);
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    buf[len] = '\0';
    int status = pclose(f);
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
    assert_non_null(strstr(lin, "\"abi\": {\"major\": 1, \"minor\": 1}"));
    assert_non_null(strstr(out, "\"extension_abi\": {\"major\": 1, \"minor\": 1}"));
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
