/*
 * kit_run.c - running `tenferro check-engine` from a test (kit_run.h).
 */
#include <stdlib.h>

#include "kit_run.h"
#include "tf_test.h"
#include "tf_test_run.h"

static char *g_out;

int kit_run(const char *cmd, char **out)
{
    free(g_out);
    g_out = NULL;
    char full[1100];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    int status = tf_test_run(full, &g_out);
    *out = g_out;
    return status;
}

void kit_expect(const char *out, const char *text)
{
    if (!strstr(out, text))
        fail_msg("expected \"%s\" in the output:\n%s", text, out);
}

void kit_expect_failure(const char *out, const char *start)
{
    char key[256];
    snprintf(key, sizeof key, "\n  %s", start);
    if (!strstr(out, key))
        fail_msg("no failure line starting \"%s\" in:\n%s", start, out);
}

const char *kit_row(const char *out, const char *row)
{
    static char line[256];
    char key[64];
    snprintf(key, sizeof key, "\n  %s ", row);
    const char *p = strstr(out, key);
    if (!p)
        fail_msg("no table row '%s' in:\n%s", row, out);
    p += 3;
    size_t n = strcspn(p, "\n");
    snprintf(line, sizeof line, "%.*s", (int)n, p);
    return line;
}

int kit_teardown(void **state)
{
    (void)state;
    free(g_out);
    g_out = NULL;
    return 0;
}
