/*
 * test_checkpoint_malformed.c - every malformed safetensors file is refused
 * with a clear error and nothing loaded (checkpoint.h).
 *
 * Each case is a file made byte by byte: an 8-byte length, a header and
 * data. Loading it must fail with the expected status (TF_ERR_VALIDATION,
 * or TF_ERR_UNSUPPORTED for valid files tenferro cannot hold), name the
 * argument "path", leave the out-parameter untouched, say something about
 * the cause (a fragment of the message is checked), and leave no memory
 * behind (the counting allocator's live blocks are back where they were).
 * The well-formed neighbour of the cases loads, so the cases fail for their
 * defect alone.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tenferro/checkpoint.h>

#include "tf_test_alloc.h"
#include "train_test.h"

static char g_dir[64];
static char g_path[128];

static int setup(void **state)
{
    tf_test_alloc_install();
    snprintf(g_dir, sizeof g_dir, "/tmp/tf-ckbad-XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_path, sizeof g_path, "%s/case.safetensors", g_dir);
    return tft_cpu_setup(state);
}

static int teardown(void **state)
{
    unlink(g_path);
    rmdir(g_dir);
    return tft_cpu_teardown(state);
}

/* Writes length (as 8 little-endian bytes), then n_header bytes of header, then data. */
static void write_file(uint64_t length, const char *header, size_t n_header, const void *data,
                       size_t n_data)
{
    FILE *f = fopen(g_path, "wb");
    assert_non_null(f);
    unsigned char head[8];
    for (int b = 0; b < 8; b++)
        head[b] = (unsigned char)(length >> (8 * b));
    assert_int_equal(fwrite(head, 1, 8, f), 8);
    if (n_header)
        assert_int_equal(fwrite(header, 1, n_header, f), n_header);
    if (n_data)
        assert_int_equal(fwrite(data, 1, n_data, f), n_data);
    fclose(f);
}

/* A file whose header is `json` with its true length. */
static void write_json(const char *json, const void *data, size_t n_data)
{
    write_file(strlen(json), json, strlen(json), data, n_data);
}

static const unsigned char k_data[64] = {1, 0, 1, 0, 1, 0, 1, 0, 1}; /* zeros beyond */

/* Loading the current file fails with `want`; the message mentions `fragment`. */
static void expect_refused(tf_status want, const char *fragment)
{
    size_t live = tf_test_alloc_live_blocks();
    tf_checkpoint *ck = (tf_checkpoint *)(void *)&live; /* a sentinel, never dereferenced */
    trt_expect_fail(tf_checkpoint_load(g_path, NULL, &ck), want, "path");
    assert_ptr_equal(ck, (tf_checkpoint *)(void *)&live);
    if (!strstr(tf_train_error_message(), fragment))
        fail_msg("message '%s' does not mention '%s'", tf_train_error_message(), fragment);
    assert_int_equal(tf_test_alloc_live_blocks(), live);
    /* the same with an engine to upload to */
    trt_expect_fail(tf_checkpoint_load(g_path, g_cpu, &ck), want, "path");
    assert_int_equal(tf_test_alloc_live_blocks(), live);
}

static void expect_loads(void)
{
    tf_checkpoint *ck = NULL;
    TF_ASSERT_OK(tf_checkpoint_load(g_path, NULL, &ck));
    tf_checkpoint_destroy(ck);
}

#define ENTRY(name, dtype, shape, b, e) \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" b "," e "]}"

static void test_bad_lengths(void **state)
{
    (void)state;
    write_file(0, NULL, 0, NULL, 0);
    FILE *f = fopen(g_path, "wb"); /* 5 bytes: not even the length */
    fputs("abcde", f);
    fclose(f);
    expect_refused(TF_ERR_VALIDATION, "fewer than the 8");
    write_file(0, NULL, 0, NULL, 0);
    expect_refused(TF_ERR_VALIDATION, "too small");
    write_file(1, "{", 1, NULL, 0);
    expect_refused(TF_ERR_VALIDATION, "too small");
    write_file(100, "{}", 2, NULL, 0);
    expect_refused(TF_ERR_VALIDATION, "past the end of the file");
    write_file(UINT64_MAX, "{}", 2, NULL, 0);
    expect_refused(TF_ERR_VALIDATION, "above the limit");
    write_file((uint64_t)TF_CHECKPOINT_MAX_HEADER + 1, "{}", 2, NULL, 0);
    expect_refused(TF_ERR_VALIDATION, "above the limit");
    write_json("{}", NULL, 0); /* the smallest valid file */
    expect_loads();
    write_json("{}\n\t ", NULL, 0); /* whitespace may follow the object */
    expect_loads();
}

static void test_bad_json(void **state)
{
    (void)state;
    static const struct {
        const char *json, *fragment;
    } cases[] = {
        {"[]", "must begin with '{'"},
        {"{\"a\" {}}", "expected ':'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}", "expected ','"},
        {"{\"a\":{}}", "lacks"},
        {"{} x", "bytes after"},
        {" {}", "must begin with '{'"},
        {"{\"a", "unterminated string"},
        {"{\"a\xff\":{}}", "not valid UTF-8"},
        {"{\"a\xc0\x80\":{}}", "not valid UTF-8"},
        {"{\"a\\u0000\":{}}", "NUL"},
        {"{\"a\\ud800\":{}}", "high surrogate"},
        {"{\"a\\udc00\":{}}", "low surrogate"},
        {"{\"a\\x\":{}}", "unknown escape"},
        {"{\"a\\u12g4\":{}}", "hex digits"},
        {"{\"a\tb\":{}}", "control character"},
        {"{,}", "expected '\"'"},
        {"{\"a\":1}", "expected '{'"},
        {"{\"__metadata__\":{\"k\":1}}", "must be a string"},
        {"{\"__metadata__\":{},\"__metadata__\":{}}", "appears twice"},
        {"{\"__metadata__\":{\"k\":\"v\",\"k\":\"w\"}}", "appears twice"},
        {"{\"\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", "empty tensor name"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[]}}", "lacks"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4],\"x\":1}}",
         "other than"},
        {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\"}}", "repeats a field"},
        {"{\"a\":{\"dtype\":7,\"shape\":[],\"data_offsets\":[0,4]}}", "expected '\"'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", "leading zero"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", "non-negative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", "no sign"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]}}", "no sign"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[[1]],\"data_offsets\":[0,4]}}", "non-negative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,4]}}",
         "too large"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,18446744073709551616]}}",
         "too large"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4,8]}}", "too many"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[4]}}", "[begin, end]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", "expected '['"},
        {"{\"a\":{\"dtype\":\"Q7\",\"shape\":[],\"data_offsets\":[0,4]}}", "unknown dtype"},
        {"{\"a\":{\"dtype\":\"f32\",\"shape\":[],\"data_offsets\":[0,4]}}", "unknown dtype"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_json(cases[i].json, k_data, 4);
        expect_refused(TF_ERR_VALIDATION, cases[i].fragment);
    }
    write_json("{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", k_data, 4);
    expect_loads();
    write_json("{\"a\\u00e9\\ud83d\\ude00\\n\":{\"dtype\":\"F32\",\"shape\":[1],"
               "\"data_offsets\":[0,4]}}    ",
               k_data, 4);
    tf_checkpoint *ck = NULL;
    TF_ASSERT_OK(tf_checkpoint_load(g_path, NULL, &ck));
    assert_string_equal(tf_checkpoint_name(ck, 0), "a\xc3\xa9\xf0\x9f\x98\x80\n");
    tf_checkpoint_destroy(ck);
}

static void test_valid_but_unsupported(void **state)
{
    (void)state;
    write_json("{" ENTRY("a", "F16", "[2]", "0", "4") "}", k_data, 4);
    expect_refused(TF_ERR_UNSUPPORTED, "F16");
    write_json("{" ENTRY("a", "BF16", "[2]", "0", "4") "}", k_data, 4);
    expect_refused(TF_ERR_UNSUPPORTED, "no such dtype");
    write_json("{" ENTRY("a", "U8", "[4]", "0", "4") "}", k_data, 4);
    expect_refused(TF_ERR_UNSUPPORTED, "U8");
    write_json("{" ENTRY("a", "BOOL", "[1,1,1,1,1,1,1,1,1]", "0", "1") "}", k_data, 1);
    expect_refused(TF_ERR_UNSUPPORTED, "TF_MAX_RANK");
    write_json("{" ENTRY("a", "BOOL", "[1,1,1,1,1,1,1,1]", "0", "1") "}", k_data, 1);
    expect_loads();
}

static void test_bad_offsets_and_data(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        size_t n_data;
        const char *fragment;
    } cases[] = {
        /* end - begin is not the shape's size; begin after end; an overflowing shape */
        {"{" ENTRY("a", "F32", "[2]", "0", "4") "}", 4, "do not hold"},
        {"{" ENTRY("a", "F32", "[1]", "8", "4") "," ENTRY("b", "F32", "[1]", "0", "4") "}", 8,
         "do not hold"},
        {"{" ENTRY("a", "F64", "[4611686018427387904,4]", "0", "8") "}", 8, "overflowing"},
        /* overlapping tensors; a hole between tensors, and one before the first */
        {"{" ENTRY("a", "F32", "[2]", "0", "8") "," ENTRY("b", "F32", "[1]", "4", "8") "}", 8,
         "overlaps"},
        {"{" ENTRY("a", "F32", "[1]", "0", "4") "," ENTRY("b", "F32", "[1]", "8", "12") "}", 12,
         "hole"},
        {"{" ENTRY("a", "F32", "[1]", "4", "8") "}", 8, "hole"},
        /* data past the end of the file (truncated), and bytes after the last tensor */
        {"{" ENTRY("a", "F64", "[3]", "0", "24") "}", 20, "truncated"},
        {"{" ENTRY("a", "F64", "[1]", "0", "8") "}", 12, "follow the last tensor"},
        /* the same name twice */
        {"{" ENTRY("a", "F32", "[1]", "0", "4") "," ENTRY("a", "F32", "[1]", "4", "8") "}", 8,
         "appears twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_json(cases[i].json, k_data, cases[i].n_data);
        expect_refused(TF_ERR_VALIDATION, cases[i].fragment);
    }
    /* a BOOL byte that is neither 0 nor 1 */
    const unsigned char two[3] = {1, 2, 0};
    write_json("{" ENTRY("m", "BOOL", "[3]", "0", "3") "}", two, 3);
    expect_refused(TF_ERR_VALIDATION, "BOOL byte");
    write_json("{" ENTRY("m", "BOOL", "[3,1]", "0", "3") "," ENTRY("e", "F32", "[0,5]", "3", "3")
               "}",
               k_data, 3);
    expect_loads(); /* empty tensors may share an offset with nothing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_lengths),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_valid_but_unsupported),
        cmocka_unit_test(test_bad_offsets_and_data),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
