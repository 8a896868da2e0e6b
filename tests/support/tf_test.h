/*
 * tf_test.h - what every cmocka test of the project includes.
 */
#ifndef TF_TEST_H
#define TF_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <tenferro/tenferro.h>

/* Asserts a call succeeded, printing the thread's last error otherwise. */
#define TF_ASSERT_OK(call)                                                           \
    do {                                                                             \
        tf_status tf_st_ = (call);                                                   \
        if (tf_st_ != TF_OK)                                                         \
            fail_msg("%s -> %s: %s (cause: %s)", #call, tf_status_name(tf_st_),      \
                     tf_error_message(), tf_error_cause());                          \
    } while (0)

/* Asserts a call failed with `expected`. */
#define TF_ASSERT_STATUS(call, expected)                                             \
    do {                                                                             \
        tf_status tf_st_ = (call);                                                   \
        if (tf_st_ != (expected))                                                    \
            fail_msg("%s -> %s, expected %s (%s)", #call, tf_status_name(tf_st_),    \
                     tf_status_name(expected), tf_error_message());                  \
    } while (0)

#endif /* TF_TEST_H */
