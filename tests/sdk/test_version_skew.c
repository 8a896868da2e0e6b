/*
 * test_version_skew.c - plugins of other minors of the engine ABI in
 * today's library (issue 20, deliverable 4).
 *
 * Older: the SDK's engine template built against the headers of engine ABI
 * 1.0 and 1.2 (tests/sdk/abi_1_0, abi_1_2) loads, states its minor, and the
 * conformance kit passes it: the host reads only the fields those minors
 * had, sends only the work they defined (no FUSED of several outputs, no
 * deferred chains, no complex dtypes), and the kit asks nothing of them they
 * could not know.
 *
 * Newer: an engine stating minor TF_ENGINE_ABI_MINOR + 6, with a larger
 * descriptor, a capability bit and a primitive and an op this host does
 * not know (tests/plugins/fixtures/newer.c), loads; what it claims of the
 * newer minor is refused cleanly by the host (the engine never sees it:
 * the fixture would say so in the cause), the rest works, and the kit
 * passes it, checking the refusal instead of asking it for zeros.
 */
#include "kit_run.h"
#include "tf_test.h"

static void older_minor_passes(const char *minor, uint32_t want_minor)
{
    char path[512], cmd[700], header[64];
    snprintf(path, sizeof path, TF_SKEW_DIR "/%s/tenferro-engine-example.so", minor);
    tf_plugin *p = NULL;
    TF_ASSERT_OK(tf_plugin_load(path, &p));
    assert_int_equal(tf_plugin_abi_minor(p), want_minor);
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_create(p, NULL, &e));
    /* ABI 1.3's FUSED of several outputs is never asked of an older engine */
    tf_dtype d[3] = {TF_F64, TF_F64, TF_F64};
    assert_false(tf_engine_supports(e, TF_PRIM_FUSED, 1, d, 3));
    assert_true(tf_engine_supports(e, TF_PRIM_DOT_GENERAL, 0, d, 3));
    /* ABI 1.4's complex dtypes neither: a call with them is refused, naming the minor */
    int64_t two = 2;
    double zv[4] = {1, 2, 3, 4};
    tf_tensor *z = NULL, *zo = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_C128, 1, &two, zv, 2, &z));
    TF_ASSERT_OK(tf_tensor_empty(e, TF_C128, 1, &two, &zo));
    tf_dtype zz[2] = {TF_C128, TF_C128};
    assert_false(tf_engine_supports(e, TF_PRIM_COPY, 0, zz, 2));
    TF_ASSERT_STATUS(tf_engine_execute(e, TF_PRIM_COPY, NULL, 1, &z, 1, &zo), TF_ERR_UNSUPPORTED);
    assert_non_null(strstr(tf_error_message(), "older than 1.4, which has no complex dtypes"));
    tf_tensor_release(z);
    tf_tensor_release(zo);
    tf_engine_destroy(e);

    char *out;
    snprintf(cmd, sizeof cmd, KIT "%s", path);
    int rc = kit_run(cmd, &out);
    if (rc != 0)
        fail_msg("the kit fails the template built against ABI %s (exit %d):\n%s", minor, rc, out);
    snprintf(header, sizeof header, ", ABI 1.%u, from ", want_minor);
    kit_expect(out, header);
    kit_expect(out, "PASS: engine 'example'");
    assert_null(strstr(out, "\nfailures ("));
    /* never asked about complex (engine_abi.h): its c64 and c128 cells stay "-",
       even for the primitives it claims for reals */
    static const char *const rows[] = {"unary/neg", "dot_general", "copy"};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char tok[8][64]; /* op, f32, f64, i32, i64, bool, c64, c128 */
        int n = sscanf(kit_row(out, rows[i]), "%63s %63s %63s %63s %63s %63s %63s %63s", tok[0],
                       tok[1], tok[2], tok[3], tok[4], tok[5], tok[6], tok[7]);
        if (n != 8 || strcmp(tok[1], "pass") != 0 || strcmp(tok[6], "-") != 0 ||
            strcmp(tok[7], "-") != 0)
            fail_msg("ABI %s: the kit's row '%s': expected f32 pass and c64, c128 '-'", minor,
                     rows[i]);
    }
}

static void test_older_minors_pass_the_kit(void **state)
{
    (void)state;
    older_minor_passes("1_0", 0);
    older_minor_passes("1_2", 2);
}

/* The host refuses what it does not know, without calling the engine. */
static void refused_cleanly(tf_engine *e, tf_prim prim, const void *params, size_t n_in,
                            tf_tensor *const *in, tf_tensor *out)
{
    tf_error_clear();
    tf_status st = tf_engine_execute(e, prim, params, n_in, in, 1, &out);
    if (st == TF_OK)
        fail_msg("the host ran primitive %d of a newer minor", (int)prim);
    assert_null(strstr(tf_error_message(), "newer: the host sent"));
    assert_null(strstr(tf_error_cause(), "newer: the host sent"));
}

static void test_newer_minor_loads_with_newer_features_refused(void **state)
{
    (void)state;
    tf_plugin *p = NULL;
    TF_ASSERT_OK(tf_plugin_load(TF_NEWER_PLUGIN, &p));
    assert_int_equal(tf_plugin_abi_major(p), TF_ENGINE_ABI_MAJOR);
    assert_int_equal(tf_plugin_abi_minor(p), TF_ENGINE_ABI_MINOR + 6);
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_create(p, NULL, &e));
    assert_true(tf_engine_uses_host_memory(e)); /* the bits it knows are read */

    int64_t n = 4;
    float one[4] = {1, 2, 3, 4}, back[4];
    tf_tensor *h = NULL, *x = NULL, *y = NULL, *got = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 1, &n, one, 4, &h));
    TF_ASSERT_OK(tf_engine_upload(e, h, &x));
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &n, &y));
    tf_tensor *xx[2] = {x, x};
    /* the engine says yes to its newer work; the host answers for itself */
    const tf_dtype f3[3] = {TF_F32, TF_F32, TF_F32};
    assert_false(tf_engine_supports(e, TF_PRIM_COUNT_, 0, f3, 1));
    assert_false(tf_engine_supports(e, TF_PRIM_UNARY, TF_UNARY_COUNT_, f3, 2));
    assert_true(tf_engine_supports(e, TF_PRIM_BINARY, TF_BINARY_ADD, f3, 3));
    refused_cleanly(e, TF_PRIM_COUNT_, NULL, 0, NULL, y); /* its newer primitive */
    tf_unary_params newer_op = {sizeof newer_op, TF_UNARY_COUNT_};
    refused_cleanly(e, TF_PRIM_UNARY, &newer_op, 1, xx, y); /* its newer unary op */
    /* what both minors know works */
    tf_binary_params add = {sizeof add, TF_BINARY_ADD};
    TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_BINARY, &add, 2, xx, 1, &y));
    TF_ASSERT_OK(tf_engine_download(e, y, &got));
    TF_ASSERT_OK(tf_tensor_copy_to_host(got, TF_F32, back, 4));
    for (int i = 0; i < 4; i++)
        assert_true(back[i] == 2 * one[i]);
    tf_tensor_release(got);
    tf_tensor_release(y);
    tf_tensor_release(x);
    tf_tensor_release(h);
    tf_engine_destroy(e);

    char *out;
    int rc = kit_run(KIT "--verbose " TF_NEWER_PLUGIN, &out);
    if (rc != 0)
        fail_msg("the kit fails the engine of a newer minor (exit %d):\n%s", rc, out);
    kit_expect(out, "newer than this host's");
    kit_expect(out, "the host refuses to run primitive 17");
    kit_expect(out, "PASS: engine 'newer'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_older_minors_pass_the_kit),
        cmocka_unit_test(test_newer_minor_loads_with_newer_features_refused),
    };
    return cmocka_run_group_tests(tests, NULL, kit_teardown);
}
