/*
 * test_status.c - status codes, the per-thread last-error slot, versions.
 */
#include "tf_test.h"

#include <pthread.h>

/* The codes as the header lists them, to compare the library against. */
typedef struct status_row {
    tf_status code;
    int value;
    const char *name;
    const char *message;
} status_row;

static const status_row k_rows[] = {
#define ROW_(name, value, msg) {name, value, #name, msg},
    TF_STATUS_LIST(ROW_)
#undef ROW_
};
#define N_ROWS (sizeof k_rows / sizeof k_rows[0])

/* A call that certainly fails with TF_ERR_RANK_TOO_LARGE. */
static tf_status fail_rank(void)
{
    int64_t shape[TF_MAX_RANK + 1];
    for (size_t i = 0; i < TF_MAX_RANK + 1; i++)
        shape[i] = 1;
    double x = 0;
    tf_tensor *t = NULL;
    return tf_tensor_from_host(TF_F64, TF_MAX_RANK + 1, shape, &x, 1, &t);
}

/* A call that certainly fails with TF_ERR_VALIDATION (a bad dtype). */
static tf_status fail_dtype(void)
{
    double x = 0;
    tf_tensor *t = NULL;
    return tf_tensor_from_host((tf_dtype)77, 0, NULL, &x, 1, &t);
}

static void test_codes_are_dense_and_counted(void **state)
{
    assert_int_equal(N_ROWS, TF_STATUS_COUNT_);
    for (size_t i = 0; i < N_ROWS; i++) {
        assert_int_equal(k_rows[i].value, (int)i);
        assert_int_equal((int)k_rows[i].code, (int)i);
    }
    assert_int_equal(TF_OK, 0);
}

static void test_names_match_and_are_distinct(void **state)
{
    for (size_t i = 0; i < N_ROWS; i++) {
        const char *name = tf_status_name(k_rows[i].code);
        assert_non_null(name);
        assert_string_equal(name, k_rows[i].name);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(name, tf_status_name(k_rows[j].code));
    }
}

static void test_messages_match_and_are_non_empty(void **state)
{
    for (size_t i = 0; i < N_ROWS; i++) {
        const char *msg = tf_status_message(k_rows[i].code);
        assert_non_null(msg);
        assert_true(msg[0] != '\0');
        assert_string_equal(msg, k_rows[i].message);
    }
}

static void test_unknown_values(void **state)
{
    const int unknown[] = {-1,   TF_STATUS_COUNT_, TF_STATUS_COUNT_ + 1,
                           1000, -2147483647 - 1,  2147483647};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *name = tf_status_name((tf_status)unknown[i]);
        assert_non_null(name);
        assert_string_equal(name, "TF_UNKNOWN_STATUS");
        const char *msg = tf_status_message((tf_status)unknown[i]);
        assert_non_null(msg);
        assert_true(msg[0] != '\0');
        for (size_t j = 0; j < N_ROWS; j++)
            assert_string_not_equal(msg, k_rows[j].message);
    }
}

static void assert_slot_clear(void)
{
    assert_int_equal(tf_error_status(), TF_OK);
    assert_non_null(tf_error_message());
    assert_non_null(tf_error_op());
    assert_non_null(tf_error_argument());
    assert_non_null(tf_error_cause());
    assert_string_equal(tf_error_message(), "");
    assert_string_equal(tf_error_op(), "");
    assert_string_equal(tf_error_argument(), "");
    assert_string_equal(tf_error_cause(), "");
}

static void test_slot_set_by_failure_and_cleared(void **state)
{
    tf_error_clear();
    assert_slot_clear();

    assert_int_equal(fail_dtype(), TF_ERR_VALIDATION);
    assert_int_equal(tf_error_status(), TF_ERR_VALIDATION);
    assert_true(tf_error_message()[0] != '\0');
    /* The message names the offending value and the argument. */
    assert_non_null(strstr(tf_error_message(), "77"));
    assert_non_null(strstr(tf_error_argument(), "dtype"));
    assert_true(tf_error_op()[0] != '\0');

    /* A later failure replaces the earlier one. */
    assert_int_equal(fail_rank(), TF_ERR_RANK_TOO_LARGE);
    assert_int_equal(tf_error_status(), TF_ERR_RANK_TOO_LARGE);
    assert_null(strstr(tf_error_message(), "77"));

    tf_error_clear();
    assert_slot_clear();
}

static void test_success_keeps_the_last_failure(void **state)
{
    tf_error_clear();
    assert_int_equal(fail_rank(), TF_ERR_RANK_TOO_LARGE);
    char before[1024];
    snprintf(before, sizeof before, "%s", tf_error_message());

    double x = 1.5;
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 0, NULL, &x, 1, &t));
    tf_tensor_release(t);

    /* "stays in a per-thread slot until the next failure ... or tf_error_clear()" */
    assert_int_equal(tf_error_status(), TF_ERR_RANK_TOO_LARGE);
    assert_string_equal(tf_error_message(), before);
    tf_error_clear();
}

/* ---- per-thread slots ---- */

typedef struct thread_report {
    tf_status initial_status;
    int initial_message_empty;
    tf_status after_status;
    tf_status end_status;
    char after_argument[64];
    pthread_barrier_t *barrier;
} thread_report;

static void *other_thread(void *arg)
{
    thread_report *r = arg;
    r->initial_status = tf_error_status();
    r->initial_message_empty = tf_error_message()[0] == '\0';
    pthread_barrier_wait(r->barrier); /* main has its failure recorded */
    (void)fail_dtype();
    r->after_status = tf_error_status();
    snprintf(r->after_argument, sizeof r->after_argument, "%s", tf_error_argument());
    pthread_barrier_wait(r->barrier);  /* main checks its slot, we keep ours */
    pthread_barrier_wait(r->barrier);  /* main cleared its slot */
    r->end_status = tf_error_status(); /* ours must survive main's clear */
    return NULL;
}

static void test_slots_are_per_thread(void **state)
{
    pthread_barrier_t barrier;
    assert_int_equal(pthread_barrier_init(&barrier, NULL, 2), 0);
    thread_report r = {0};
    r.barrier = &barrier;

    tf_error_clear();
    assert_int_equal(fail_rank(), TF_ERR_RANK_TOO_LARGE);
    char main_message[1024];
    snprintf(main_message, sizeof main_message, "%s", tf_error_message());

    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, other_thread, &r), 0);
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier);
    /* The other thread failed differently; this thread's slot is unchanged. */
    assert_int_equal(tf_error_status(), TF_ERR_RANK_TOO_LARGE);
    assert_string_equal(tf_error_message(), main_message);
    assert_null(strstr(tf_error_argument(), "dtype"));
    tf_error_clear();
    pthread_barrier_wait(&barrier);
    assert_int_equal(pthread_join(th, NULL), 0);
    pthread_barrier_destroy(&barrier);

    /* A new thread starts clean, even though this one had failed. */
    assert_int_equal(r.after_status, TF_ERR_VALIDATION);
    assert_non_null(strstr(r.after_argument, "dtype"));
    assert_int_equal(r.initial_status, TF_OK);
    assert_true(r.initial_message_empty);
    /* ...and its failure survived this thread's tf_error_clear(). */
    assert_int_equal(r.end_status, TF_ERR_VALIDATION);
}

static void *fresh_thread(void *arg)
{
    tf_status *out = arg;
    out[0] = tf_error_status();
    out[1] = tf_error_message()[0] == '\0' ? TF_OK : TF_ERR_VALIDATION;
    return NULL;
}

static void test_new_thread_slot_is_clear(void **state)
{
    assert_int_equal(fail_dtype(), TF_ERR_VALIDATION);
    tf_status seen[2] = {TF_ERR_BACKEND, TF_ERR_BACKEND};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fresh_thread, seen), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(seen[0], TF_OK);
    assert_int_equal(seen[1], TF_OK);
    assert_int_equal(tf_error_status(), TF_ERR_VALIDATION);
    tf_error_clear();
}

/* ---- versions ---- */

static void test_versions(void **state)
{
    assert_int_equal(tf_version_number(), TF_VERSION_NUMBER);
    assert_int_equal(TF_VERSION_NUMBER,
                     TF_VERSION_MAJOR * 10000 + TF_VERSION_MINOR * 100 + TF_VERSION_PATCH);
    assert_non_null(tf_version_string());
    assert_string_equal(tf_version_string(), TF_VERSION_STRING);
    char built[32];
    snprintf(built, sizeof built, "%d.%d.%d", TF_VERSION_MAJOR, TF_VERSION_MINOR, TF_VERSION_PATCH);
    assert_string_equal(TF_VERSION_STRING, built);
    /* The build system's project version is the header's. */
    assert_string_equal(TF_TEST_PROJECT_VERSION, TF_VERSION_STRING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codes_are_dense_and_counted),
        cmocka_unit_test(test_names_match_and_are_distinct),
        cmocka_unit_test(test_messages_match_and_are_non_empty),
        cmocka_unit_test(test_unknown_values),
        cmocka_unit_test(test_slot_set_by_failure_and_cleared),
        cmocka_unit_test(test_success_keeps_the_last_failure),
        cmocka_unit_test(test_slots_are_per_thread),
        cmocka_unit_test(test_new_thread_slot_is_clear),
        cmocka_unit_test(test_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
