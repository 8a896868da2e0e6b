/*
 * fuzz_config.c - the INI configuration loader (tenferro/config.h).
 *
 * The input is the whole file. It is written to a memfd (no disk traffic,
 * one descriptor for the process) and read through tf_config_load_file by
 * its /proc path. A refused file must leave the out-parameter untouched and
 * give TF_ERR_CONFIG (or TF_ERR_OUT_OF_MEMORY) with a message; an accepted
 * one must answer every accessor consistently, and opening its engines must
 * either start one or fail cleanly with a report. The plugin search path is
 * pinned to the build tree (fz_setup_environment), so "cpu" is the only
 * engine a name can start; a name with '/' (a file path) is not opened, so
 * that a run never dlopens arbitrary files of the machine.
 *
 * What docs/apps.md says the reader refuses is checked independently of
 * it (issue 19, item 10): an accepted file has no NUL byte, no line longer
 * than 198 characters (a last line without a newline included), no pair
 * split at ':' and nothing but a comment after a section's ']', and is at
 * most 64 KiB. The loader's own read (the plugin search path) runs on the
 * same file. An input whose first byte is 0xFD, 0xFE or 0xFF names /dev/null
 * (an empty configuration), /dev/zero or a FIFO without a writer instead
 * (issue 19, item 5): both refused, neither may block or spin.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tenferro/tenferro.h>

#include "fuzz_common.h"

static int g_fd = -1;
static char g_path[64], g_fifo[64];

static void setup(void)
{
    fz_setup_environment();
    g_fd = memfd_create("tf-fuzz-config", 0);
    if (g_fd < 0)
        fz_fail(__FILE__, __LINE__, "memfd_create failed");
    snprintf(g_path, sizeof g_path, "/proc/self/fd/%d", g_fd);
    snprintf(g_fifo, sizeof g_fifo, "/tmp/tf-fuzz-config-%d.fifo", (int)getpid());
    unlink(g_fifo);
    if (mkfifo(g_fifo, 0600) != 0)
        fz_fail(__FILE__, __LINE__, "mkfifo %s failed", g_fifo);
}

/*
 * Whether the documented refusals (docs/apps.md, "The file") clear the
 * file: no NUL, lines of at most 198 characters without their "\n" or
 * "\r\n", at most 64 KiB, every pair split at '=' (a continuation line,
 * indented after a pair, is refused anyway), nothing but a comment after a
 * section's ']'.
 */
static bool documented_ok(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024 || memchr(data, 0, size))
        return false;
    for (size_t at = 0; at < size;) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
        char line[256];
        if (len - (len && data[at + len - 1] == '\r') > 198)
            return false;
        memcpy(line, data + at, len);
        line[len] = '\0';
        at += len + 1;
        const char *p = line;
        if (at == len + 1 && strncmp(p, "\xef\xbb\xbf", 3) == 0)
            p += 3; /* the first line's byte order mark */
        const char *q = p + strspn(p, " \t");
        if (q > p || *q == ';' || *q == '#')
            continue; /* indented (refused unless it is a pair) or a comment */
        p = q;
        if (*p == '[') {
            const char *end = strchr(p, ']');
            if (end && (end += 1 + strspn(end + 1, " \t"), *end && *end != ';' && *end != '\r'))
                return false;
        } else if (*p && p[strcspn(p, "=:")] == ':') {
            return false;
        }
    }
    return true;
}

/* /dev/null reads as an empty file; /dev/zero and a FIFO are refused at once. */
static void check_special(uint8_t which)
{
    static const char *const names[] = {"/dev/null", "/dev/zero", NULL};
    const char *path = which < 2 ? names[which] : g_fifo;
    tf_config *c = (tf_config *)&g_fd;
    tf_status st = tf_config_load_file(path, &c);
    if (which == 0) {
        FZ_CHECK(st == TF_OK, "/dev/null refused: %s", tf_error_message());
        FZ_CHECK(strcmp(tf_config_engine_source(c), "built-in") == 0, "/dev/null has engines");
        tf_config_destroy(c);
    } else {
        FZ_CHECK(st == TF_ERR_CONFIG && c == (tf_config *)&g_fd, "%s: %s", path,
                 tf_status_name(st));
        FZ_CHECK(strstr(tf_error_message(), "not a regular file") != NULL, "%s: %s", path,
                 tf_error_message());
    }
    setenv("TENFERRO_CONFIG", path, 1); /* the loader's read of it ends too */
    char **dirs = NULL;
    size_t n = 0;
    FZ_CHECK(tf_plugin_path_get(&dirs, &n) == TF_OK, "plugin path with %s", path);
    tf_plugin_path_free(dirs);
    setenv("TENFERRO_CONFIG", "/dev/null", 1);
}

static void write_input(const uint8_t *data, size_t size)
{
    FZ_CHECK(ftruncate(g_fd, 0) == 0, "ftruncate");
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(g_fd, data + done, size - done, (off_t)done);
        FZ_CHECK(n > 0, "pwrite");
        done += (size_t)n;
    }
}

/* An engine name as the file format allows it: non-empty, no blanks or commas. */
static int valid_name(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (*s == ',' || *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
            return 0;
    return 1;
}

static void check_accepted(tf_config *c)
{
    FZ_CHECK(strcmp(tf_config_file(c), g_path) == 0, "file is '%s'", tf_config_file(c));
    const char *src = tf_config_engine_source(c);
    FZ_CHECK(strcmp(src, "file") == 0 || strcmp(src, "built-in") == 0, "source '%s'", src);
    size_t n = tf_config_engine_count(c);
    FZ_CHECK(n >= 1 && n <= 16, "%zu engines", n);
    int has_path = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = tf_config_engine_at(c, i);
        FZ_CHECK(valid_name(e), "engine %zu is '%s'", i, e ? e : "(null)");
        has_path |= strchr(e, '/') != NULL;
        for (size_t j = 0; j < i; j++)
            FZ_CHECK(strcmp(e, tf_config_engine_at(c, j)) != 0, "engine '%s' listed twice", e);
    }
    FZ_CHECK(tf_config_engine_at(c, n) == NULL, "engine_at past the end");
    const char *pp = tf_config_plugin_path(c);
    FZ_CHECK(pp[0] == '\0' || pp[0] == '/', "plugin path '%s'", pp);
    if (has_path)
        return;

    /* One thread whatever the file says: the harness must stay light. */
    tf_config_set_threads(c, 1);
    tf_engine *e = (tf_engine *)&g_fd;
    char *report = NULL;
    tf_status st = tf_config_open_engine(c, &e, &report);
    FZ_CHECK(report != NULL, "no report (status %s)", tf_status_name(st));
    if (st == TF_OK) {
        FZ_CHECK(e != NULL && e != (tf_engine *)&g_fd, "no engine");
        FZ_CHECK(strstr(report, "selected engine") != NULL, "report: %s", report);
        tf_engine_destroy(e);
    } else {
        FZ_CHECK(e == (tf_engine *)&g_fd, "out-parameter written on failure");
        FZ_CHECK(tf_error_message()[0] != '\0', "failure without a message");
    }
    tf_config_report_free(report);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (g_fd < 0)
        setup();
    if (size >= 1 && data[0] >= 0xFD) {
        check_special((uint8_t)(data[0] - 0xFD));
        return 0;
    }
    write_input(data, size);
    tf_config *c = (tf_config *)&g_fd; /* a sentinel: must survive a refusal */
    tf_status st = tf_config_load_file(g_path, &c);
    setenv("TENFERRO_CONFIG", g_path, 1); /* the plugin search reads the same file */
    char **dirs = NULL;
    size_t n_dirs = 0;
    tf_status pst = tf_plugin_path_get(&dirs, &n_dirs);
    FZ_CHECK(pst == TF_OK || pst == TF_ERR_OUT_OF_MEMORY, "plugin path: %s", tf_status_name(pst));
    tf_plugin_path_free(dirs);
    setenv("TENFERRO_CONFIG", "/dev/null", 1);
    if (st == TF_OK)
        FZ_CHECK(documented_ok(data, size), "accepted a file docs/apps.md says is refused");
    if (st != TF_OK) {
        FZ_CHECK(st == TF_ERR_CONFIG || st == TF_ERR_OUT_OF_MEMORY, "status %s",
                 tf_status_name(st));
        FZ_CHECK(c == (tf_config *)&g_fd, "out-parameter written on failure");
        const char *msg = tf_error_message();
        FZ_CHECK(strstr(msg, g_path) != NULL, "message does not name the file: %s", msg);
        return 0;
    }
    check_accepted(c);
    tf_config_destroy(c);
    return 0;
}
