/*
 * test_einsum_cli.c - `tenferro einsum-path`: the path and its costs in
 * text and JSON for each method, non-ASCII indices, refusals with the
 * caret under the offending character (exit 1), and usage errors (exit 2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_check.h"
#include "tf_test.h"
#include "tf_test_run.h"

static int run(const char *args, char **out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s einsum-path %s", TF_CLI_PATH, args);
    return tf_test_run(cmd, out);
}

/* Runs with stderr captured in stdout. */
static int run_err(const char *args, char **out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s einsum-path %s 2>&1", TF_CLI_PATH, args);
    return tf_test_run(cmd, out);
}

static void test_text(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run("'ij,jk,kl->il' 2x3,3x4,4x5", &out), 0);
    assert_non_null(strstr(out, "Complete contraction:  ij,jk,kl->il"));
    assert_non_null(strstr(out, "Optimize:  optimal"));
    assert_non_null(strstr(out, "Optimized FLOP count:  1.280e+02")); /* numpy's 129 minus 1 */
    assert_non_null(strstr(out, "Largest intermediate:  1.000e+01 elements"));
    assert_non_null(strstr(out, "Path:  [(0, 1), (0, 1)]"));
    assert_non_null(strstr(out, "ij,jk->ik"));
    free(out);
    const char *methods[] = {"auto", "optimal", "dp", "greedy", "search --seconds 0.05"};
    for (size_t i = 0; i < 5; i++) {
        char args[128];
        snprintf(args, sizeof args,
                 "'pi,qj,ijkl,rk,sl->pqrs' 4x4,4x4,4x4x4x4,4x4,4x4 --optimize %s", methods[i]);
        assert_int_equal(run(args, &out), 0);
        assert_non_null(strstr(out, "Optimized FLOP count:  8.192e+03")); /* 4 x 2 x 4^5 */
        free(out);
    }
}

static void test_json(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run("'\xce\xb1\xce\xb2,\xce\xb2\xce\xb3' 2x3,3x4 --json", &out), 0);
    assert_true(json_check(out));
    assert_non_null(strstr(out, "\"subscripts\": \"\xce\xb1\xce\xb2,\xce\xb2\xce\xb3->"
                                "\xce\xb1\xce\xb3\""));
    assert_non_null(strstr(out, "\"flops\": 48"));
    assert_non_null(strstr(out, "\"path\": [[0, 1]]"));
    free(out);
    assert_int_equal(run("'ij,jk' 2x3,3x4 --json --memory-limit 100 --max-rank 2", &out), 0);
    assert_true(json_check(out));
    free(out);
}

static void test_refusals(void **state)
{
    (void)state;
    char *out;
    /* the caret sits under the 10th character (byte 11: an 'α' is two bytes) */
    assert_int_equal(run_err("'\xce\xb1j,jk->\xce\xb1k?' 2x3,3x4", &out), 1);
    assert_non_null(strstr(out, "TF_ERR_VALIDATION"));
    assert_non_null(strstr(out, "at byte 11, '?' is not an index"));
    assert_non_null(strstr(out, "\n           ^"));
    free(out);
    assert_int_equal(run_err("'ij,jk->ik' 2x3,4x5", &out), 1);
    assert_non_null(strstr(out, "TF_ERR_SHAPE_MISMATCH"));
    free(out);
    assert_int_equal(run_err("'ij,jk,kl->il' 2x3,3x4,4x5 --memory-limit 5", &out), 1);
    assert_non_null(strstr(out, "TF_ERR_UNSUPPORTED"));
    free(out);
}

static void test_usage(void **state)
{
    (void)state;
    char *out;
    const char *bad[] = {"",
                         "'ij'",
                         "'ij' 2xx3",
                         "'ij' 2x-3",
                         "'ij' 2x3 --optimize best",
                         "'ij' 2x3 --memory-limit -1",
                         "'ij' 2x3 --bogus",
                         "'ij' 2x3 --max-rank 0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run_err(bad[i], &out);
        if (rc != 2)
            fail_msg("einsum-path %s: exit %d, expected 2 (%s)", bad[i], rc, out);
        assert_non_null(strstr(out, "usage") ? strstr(out, "usage") : strstr(out, "bad SHAPES"));
        free(out);
    }
    assert_int_equal(run("--help", &out), 0);
    assert_non_null(strstr(out, "usage: tenferro einsum-path"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
