/*
 * test_hostile.c - ways into the core found by adversarial testing
 * (issue 19), and their siblings, at the level of tensors and plugins:
 *
 *   - a NULL shape given to tf_tensor_broadcast_in_dim was read before it
 *     was checked (item 1); every view function is swept here with each of
 *     its pointers NULL in turn;
 *   - tf_tensor_wrap_host accepted a misaligned buffer that engines then
 *     read in place (item 4): refused;
 *   - accessors of a NULL config or plugin crashed: they read as empty;
 *   - a plugin whose device_info leaves `name` or `driver` without a
 *     terminating NUL (item 2) is refused by tf_plugin_device_info, which
 *     writes the caller's struct only on success; one claiming 10^8 devices
 *     (item 6) is answered without the host walking them.
 *
 * Each refusal asserts the status, the argument named and that the
 * out-parameter is untouched; the sanitizer build checks that nothing is
 * read out of bounds.
 */
#include <stdint.h>

#include "tf_test.h"

#define SENTINEL ((tf_tensor *)(uintptr_t)0x5a5a5a5a)

/* `call` fails with `status` naming `arg` and leaves *out unwritten. */
#define EXPECT_REFUSED(out, call, status, arg)                             \
    do {                                                                   \
        (out) = SENTINEL;                                                  \
        TF_ASSERT_STATUS(call, status);                                    \
        assert_ptr_equal((out), SENTINEL);                                 \
        assert_string_equal(tf_error_argument(), (arg));                   \
    } while (0)

static tf_tensor *host_f64(size_t rank, const int64_t *shape, size_t n)
{
    static const double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, rank, shape, v, n, &t));
    return t;
}

/* ---- views with NULL pointers ---- */

static void test_view_null_pointers(void **state)
{
    (void)state;
    const int64_t sh[2] = {2, 3}, one[2] = {1, 1};
    const int dims[2] = {0, 1}, axes[1] = {0};
    tf_tensor *t = host_f64(2, sh, 6), *out;
    EXPECT_REFUSED(out, tf_tensor_broadcast_in_dim(t, 2, NULL, dims, &out), TF_ERR_VALIDATION,
                   "shape");
    EXPECT_REFUSED(out, tf_tensor_broadcast_in_dim(t, 2, sh, NULL, &out), TF_ERR_VALIDATION,
                   "dims");
    EXPECT_REFUSED(out, tf_tensor_broadcast_in_dim(NULL, 2, sh, dims, &out), TF_ERR_VALIDATION,
                   "tensor");
    /* a rank-0 operand reads no dims, but the output shape still */
    tf_tensor *s = host_f64(0, NULL, 1);
    EXPECT_REFUSED(out, tf_tensor_broadcast_in_dim(s, 2, NULL, NULL, &out), TF_ERR_VALIDATION,
                   "shape");
    TF_ASSERT_OK(tf_tensor_broadcast_in_dim(s, 0, NULL, NULL, &out)); /* rank 0 needs neither */
    tf_tensor_release(out);
    EXPECT_REFUSED(out, tf_tensor_view(t, 2, NULL, NULL, 0, &out), TF_ERR_VALIDATION, "shape");
    EXPECT_REFUSED(out, tf_tensor_reshape(t, 2, NULL, &out), TF_ERR_VALIDATION, "shape");
    EXPECT_REFUSED(out, tf_tensor_transpose(t, NULL, &out), TF_ERR_VALIDATION, "perm");
    EXPECT_REFUSED(out, tf_tensor_slice(t, NULL, sh, one, &out), TF_ERR_VALIDATION, "start");
    EXPECT_REFUSED(out, tf_tensor_slice(t, one, NULL, one, &out), TF_ERR_VALIDATION, "limit");
    EXPECT_REFUSED(out, tf_tensor_slice(t, one, sh, NULL, &out), TF_ERR_VALIDATION, "stride");
    EXPECT_REFUSED(out, tf_tensor_reverse(t, 1, NULL, &out), TF_ERR_VALIDATION, "axes");
    EXPECT_REFUSED(out, tf_tensor_reverse(t, 1, axes, NULL), TF_ERR_VALIDATION, "out");
    EXPECT_REFUSED(out, tf_tensor_diagonal(NULL, 0, 1, &out), TF_ERR_VALIDATION, "tensor");
    /* the operand is as it was */
    double back[6];
    TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, back, 6));
    for (int i = 0; i < 6; i++)
        assert_true(back[i] == i + 1);
    tf_tensor_release(s);
    tf_tensor_release(t);
}

/* ---- misaligned host buffers ---- */

static int g_released;
static void count_release(void *user, void *data)
{
    (void)user;
    (void)data;
    g_released++;
}

static void test_wrap_host_alignment(void **state)
{
    (void)state;
    _Alignas(16) unsigned char buf[16 * 9];
    const int64_t n4 = 4;
    /* a complex element is aligned as its parts are (C's complex types): c128
       at 8 bytes, not 16, so buf + 8 holds c128 elements */
    static const struct {
        tf_dtype dtype;
        size_t align;
    } cases[] = {{TF_F64, 8}, {TF_I64, 8}, {TF_F32, 4}, {TF_I32, 4}, {TF_C64, 4}, {TF_C128, 8}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (size_t off = 1; off < cases[c].align; off++) {
            tf_tensor *out;
            g_released = 0;
            EXPECT_REFUSED(out,
                           tf_tensor_wrap_host(cases[c].dtype, 1, &n4, buf + off, 4, count_release,
                                               NULL, &out),
                           TF_ERR_VALIDATION, "data");
            assert_non_null(strstr(tf_error_message(), "not aligned"));
            assert_int_equal(g_released, 0); /* nothing was kept */
        }
        tf_tensor *t = NULL; /* an aligned buffer is fine */
        TF_ASSERT_OK(tf_tensor_wrap_host(cases[c].dtype, 1, &n4, buf + cases[c].align, 4,
                                         count_release, NULL, &t));
        tf_tensor_release(t);
        assert_int_equal(g_released, 1);
    }
    /* bool has no alignment to keep; from_host copies from any address */
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_wrap_host(TF_BOOL, 1, &n4, buf + 1, 4, NULL, NULL, &t));
    tf_tensor_release(t);
    double v[4] = {1, 2, 3, 4};
    memcpy(buf + 3, v, sizeof v);
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, &n4, buf + 3, 4, &t));
    double got[4];
    TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, got, 4));
    assert_memory_equal(got, v, sizeof v);
    tf_tensor_release(t);
}

/* ---- NULL handles to the accessors ---- */

static void test_null_accessors(void **state)
{
    (void)state;
    assert_string_equal(tf_config_file(NULL), "");
    assert_string_equal(tf_config_engine_source(NULL), "");
    assert_int_equal(tf_config_engine_count(NULL), 0);
    assert_null(tf_config_engine_at(NULL, 0));
    assert_string_equal(tf_config_plugin_path(NULL), "");
    tf_config_set_threads(NULL, 4);
    assert_string_equal(tf_plugin_name(NULL), "");
    assert_string_equal(tf_plugin_version(NULL), "");
    assert_string_equal(tf_plugin_description(NULL), "");
    assert_string_equal(tf_plugin_file(NULL), "");
    assert_int_equal(tf_plugin_abi_major(NULL), 0);
    assert_int_equal(tf_plugin_abi_minor(NULL), 0);
    assert_int_equal(tf_plugin_capabilities(NULL), 0);
    assert_int_equal(tf_plugin_device_count(NULL), 0);
}

/* ---- plugins that lie in device_info ---- */

#define HOSTILE(name) TF_FIXTURE_DIR "/hostile/tenferro-engine-" name ".so"

static void test_device_strings_unterminated(void **state)
{
    (void)state;
    tf_plugin *p = NULL;
    TF_ASSERT_OK(tf_plugin_load(HOSTILE("unterminated"), &p));
    assert_int_equal(tf_plugin_device_count(p), 2);
    static const char *const field[2] = {"'name'", "'driver'"};
    for (uint32_t i = 0; i < 2; i++) {
        tf_device_info info, before;
        memset(&info, 0x3c, sizeof info);
        info.struct_size = sizeof info;
        before = info;
        TF_ASSERT_STATUS(tf_plugin_device_info(p, i, &info), TF_ERR_BACKEND);
        assert_memory_equal(&info, &before, sizeof info); /* nothing written */
        assert_non_null(strstr(tf_error_message(), "engine 'unterminated'"));
        assert_non_null(strstr(tf_error_message(), field[i]));
        assert_non_null(strstr(tf_error_message(), "without a terminating NUL"));
    }
    /* a caller of an older header, whose struct ends before the strings, is not refused */
    tf_device_info small;
    memset(&small, 0x3c, sizeof small);
    small.struct_size = (uint32_t)offsetof(tf_device_info, name);
    TF_ASSERT_OK(tf_plugin_device_info(p, 0, &small));
    assert_int_equal(small.struct_size, offsetof(tf_device_info, name));
    assert_int_equal((unsigned char)small.name[0], 0x3c); /* past its struct: untouched */
}

static void test_device_count_huge(void **state)
{
    (void)state;
    tf_plugin *p = NULL;
    TF_ASSERT_OK(tf_plugin_load(HOSTILE("many-devices"), &p));
    assert_int_equal(tf_plugin_device_count(p), 100000000u);
    tf_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TF_ASSERT_OK(tf_plugin_device_info(p, 99999999u, &info));
    assert_string_equal(info.name, "many-devices fixture device");
    TF_ASSERT_STATUS(tf_plugin_device_info(p, 100000000u, &info), TF_ERR_OUT_OF_RANGE);
    assert_string_equal(tf_error_argument(), "index");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_null_pointers),
        cmocka_unit_test(test_wrap_host_alignment),
        cmocka_unit_test(test_null_accessors),
        cmocka_unit_test(test_device_strings_unterminated),
        cmocka_unit_test(test_device_count_huge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
