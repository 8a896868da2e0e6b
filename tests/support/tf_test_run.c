/*
 * tf_test_run.c - see tf_test_run.h.
 */
#define _POSIX_C_SOURCE 200809L /* popen, pclose */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "tf_test.h"
#include "tf_test_run.h"

int tf_test_run(const char *cmd, char **out)
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
