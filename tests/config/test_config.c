/*
 * test_config.c - the configuration file and the plugin search path's safety
 * rules: where the file is found (TENFERRO_CONFIG, then XDG_CONFIG_HOME, then
 * ~/.config), the environment overrides, falling back when an engine cannot
 * start (the `faulty` fixture refuses bad options), every malformed input
 * naming file, line and key, relative and group/world-writable directories
 * and files skipped with their reasons, and `tenferro info` / `tenferro
 * bench` reporting the configured engine.
 *
 * Every test runs in a fresh temporary HOME with the tenferro variables
 * unset, so the user's own configuration never leaks in.
 */
#define _GNU_SOURCE /* mkdtemp, setenv, popen, unshare */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tf_test.h"
#include "tf_test_log.h"

static char g_home[64];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* g_home/<rel>; the static buffer is reused by the next call. */
static const char *in_home(const char *rel)
{
    static char buf[2][256];
    static int k;
    k ^= 1;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_home, rel);
    return buf[k];
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_home, sizeof g_home, "/tmp/tf-config-XXXXXX");
    if (!mkdtemp(g_home))
        return -1;
    setenv("HOME", g_home, 1);
    unsetenv("XDG_CONFIG_HOME");
    unsetenv("TENFERRO_CONFIG");
    unsetenv("TENFERRO_ENGINE");
    unsetenv("TENFERRO_PLUGIN_PATH");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "chmod -R u+w %s; rm -rf %s", g_home, g_home);
    return system(cmd) == 0 ? 0 : -1;
}

static void make_dirs(const char *rel)
{
    char cmd[320];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", in_home(rel));
    assert_int_equal(system(cmd), 0);
}

/* ---- search order ---- */

static void expect_file(const char *file)
{
    tf_config *c = NULL;
    TF_ASSERT_OK(tf_config_load(&c));
    assert_string_equal(tf_config_file(c), file);
    tf_config_destroy(c);
}

/* tf_config_free is tf_config_destroy's older name (the leak checkers see it free). */
static void test_config_free_older_name(void **state)
{
    (void)state;
    tf_config *c = NULL;
    TF_ASSERT_OK(tf_config_load(&c));
    assert_non_null(c);
    tf_config_free(c);
    tf_config_free(NULL);
    tf_config_destroy(NULL);
}

static void test_search_order(void **state)
{
    (void)state;
    make_dirs(".config/tenferro");
    make_dirs("xdg/tenferro");
    const char *etc =
        access("/etc/tenferro/config.ini", F_OK) == 0 ? "/etc/tenferro/config.ini" : "";
    expect_file(etc); /* no file of ours yet */
    char home_file[256], xdg_file[256], named[256];
    snprintf(home_file, sizeof home_file, "%s", in_home(".config/tenferro/config.ini"));
    snprintf(xdg_file, sizeof xdg_file, "%s", in_home("xdg/tenferro/config.ini"));
    snprintf(named, sizeof named, "%s", in_home("named.ini"));
    write_file(home_file, "[engine]\ndefault = cpu\n");
    write_file(xdg_file, "[engine]\ndefault = cpu\n");
    write_file(named, "[engine]\ndefault = cpu\n");
    expect_file(home_file); /* XDG_CONFIG_HOME unset: ~/.config */
    setenv("XDG_CONFIG_HOME", in_home("xdg"), 1);
    expect_file(xdg_file);
    setenv("XDG_CONFIG_HOME", "", 1); /* empty counts as unset */
    expect_file(home_file);
    setenv("XDG_CONFIG_HOME", in_home("xdg"), 1);
    setenv("TENFERRO_CONFIG", named, 1);
    expect_file(named);
}

static void test_named_file_missing(void **state)
{
    (void)state;
    setenv("TENFERRO_CONFIG", in_home("absent.ini"), 1);
    tf_config *c = (tf_config *)&c;
    TF_ASSERT_STATUS(tf_config_load(&c), TF_ERR_CONFIG);
    assert_ptr_equal(c, (tf_config *)&c);
    assert_non_null(strstr(tf_error_message(), in_home("absent.ini")));
    assert_non_null(strstr(tf_error_message(), "TENFERRO_CONFIG"));
    tf_engine *e = (tf_engine *)&e;
    TF_ASSERT_STATUS(tf_engine_open_configured(&e, NULL), TF_ERR_CONFIG);
    assert_ptr_equal(e, (tf_engine *)&e);
    TF_ASSERT_STATUS(tf_config_load_file(in_home("absent.ini"), &c), TF_ERR_CONFIG);
    assert_ptr_equal(c, (tf_config *)&c);

    /* a directory is not a file to read (fopen would give an empty one) */
    make_dirs("a-dir.ini");
    setenv("TENFERRO_CONFIG", in_home("a-dir.ini"), 1);
    TF_ASSERT_STATUS(tf_config_load(&c), TF_ERR_CONFIG);
    assert_ptr_equal(c, (tf_config *)&c);
    assert_non_null(strstr(tf_error_message(), "it is a directory"));
    /* so is one found in the search order */
    unsetenv("TENFERRO_CONFIG");
    make_dirs(".config/tenferro/config.ini");
    TF_ASSERT_STATUS(tf_config_load(&c), TF_ERR_CONFIG);
    assert_non_null(strstr(tf_error_message(), in_home(".config/tenferro/config.ini")));
}

/*
 * The last place, /etc/tenferro/config.ini, checked in a child process that
 * has an /etc of its own: an empty tmpfs mounted in a private mount
 * namespace (as root, or else inside a user namespace), so that the real
 * /etc is neither read nor changed. Returns 0 when every check passed, 77
 * when no namespace could be made, another number naming the failed check.
 */
static bool write_id_map(const char *file, const char *text)
{
    int fd = open(file, O_WRONLY);
    bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    if (fd >= 0)
        close(fd);
    return ok;
}

static int private_etc(void)
{
    if (unshare(CLONE_NEWNS) != 0) {
        char map[64];
        unsigned uid = (unsigned)geteuid(), gid = (unsigned)getegid();
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
            return 77;
        snprintf(map, sizeof map, "0 %u 1\n", uid);
        bool ok = write_id_map("/proc/self/uid_map", map);
        snprintf(map, sizeof map, "0 %u 1\n", gid);
        ok = ok && write_id_map("/proc/self/setgroups", "deny") &&
             write_id_map("/proc/self/gid_map", map);
        if (!ok)
            return 77;
    }
    if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tf-test-etc", "/etc", "tmpfs", 0, "mode=0755") != 0 ||
        mkdir("/etc/tenferro", 0755) != 0)
        return 77;
    return 0;
}

/* The file tf_config_load picks, or the error's message ("!" first). */
static const char *chosen(void)
{
    static char buf[1024];
    tf_config *c;
    if (tf_config_load(&c) != TF_OK) {
        snprintf(buf, sizeof buf, "!%s", tf_error_message());
        return buf;
    }
    snprintf(buf, sizeof buf, "%s", tf_config_file(c));
    tf_config_destroy(c);
    return buf;
}

static int system_file_child(void)
{
    int r = private_etc();
    if (r)
        return r;
    const char *etc = "/etc/tenferro/config.ini";
    char home_file[256], xdg_file[256];
    snprintf(home_file, sizeof home_file, "%s", in_home(".config/tenferro/config.ini"));
    snprintf(xdg_file, sizeof xdg_file, "%s", in_home("xdg/tenferro/config.ini"));
    if (strcmp(chosen(), "") != 0)
        return 1; /* nothing anywhere: the built-in choice */
    write_file(etc, "[engine]\ndefault = from_etc\n");
    if (strcmp(chosen(), etc) != 0)
        return 2;
    tf_config *c;
    if (tf_config_load(&c) != TF_OK || strcmp(tf_config_engine_at(c, 0), "from_etc") != 0)
        return 3;
    tf_config_destroy(c);
    write_file(home_file, "[engine]\ndefault = cpu\n"); /* ~/.config comes before /etc */
    if (strcmp(chosen(), home_file) != 0)
        return 4;
    setenv("XDG_CONFIG_HOME", in_home("xdg"), 1); /* ... XDG_CONFIG_HOME replaces it */
    if (strcmp(chosen(), etc) != 0)
        return 5; /* no file there: on to /etc, never back to ~/.config */
    write_file(xdg_file, "[engine]\ndefault = cpu\n");
    if (strcmp(chosen(), xdg_file) != 0)
        return 6;
    unlink(xdg_file);
    unsetenv("XDG_CONFIG_HOME");
    unlink(home_file);
    write_file(etc, "[engine]\n\nbogus = 1\n"); /* an error there names that file */
    const char *m = chosen();
    if (m[0] != '!' || !strstr(m, "/etc/tenferro/config.ini:3: [engine] bogus: unknown key"))
        return 7;
    return 0;
}

static void test_system_file(void **state)
{
    (void)state;
    make_dirs(".config/tenferro");
    make_dirs("xdg/tenferro");
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(system_file_child());
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) {
        fprintf(stderr, "test_system_file: no mount namespace here (%s); /etc not checked\n",
                strerror(EPERM));
        skip();
    }
    if (WEXITSTATUS(status) != 0)
        fail_msg("the /etc search-order check %d failed", WEXITSTATUS(status));
}

/* ---- contents and overrides ---- */

static tf_config *load_text(const char *text)
{
    write_file(in_home("c.ini"), text);
    setenv("TENFERRO_CONFIG", in_home("c.ini"), 1);
    tf_config *c = NULL;
    TF_ASSERT_OK(tf_config_load(&c));
    return c;
}

static void test_engine_list_and_overrides(void **state)
{
    (void)state;
    tf_config *c = load_text("# comment\n[engine]\ndefault = vulkan\n"
                             "fallback = faulty , cpu, vulkan\n[plugins]\npath = /opt/a:/opt/b\n");
    assert_string_equal(tf_config_engine_source(c), "file");
    assert_int_equal(tf_config_engine_count(c), 3);
    assert_string_equal(tf_config_engine_at(c, 0), "vulkan");
    assert_string_equal(tf_config_engine_at(c, 1), "faulty");
    assert_string_equal(tf_config_engine_at(c, 2), "cpu");
    assert_null(tf_config_engine_at(c, 3));
    assert_string_equal(tf_config_plugin_path(c), "/opt/a:/opt/b");
    tf_config_destroy(c);

    setenv("TENFERRO_ENGINE", "cpu,faulty", 1);
    TF_ASSERT_OK(tf_config_load(&c));
    assert_string_equal(tf_config_engine_source(c), "TENFERRO_ENGINE");
    assert_int_equal(tf_config_engine_count(c), 2);
    assert_string_equal(tf_config_engine_at(c, 0), "cpu");
    assert_string_equal(tf_config_engine_at(c, 1), "faulty");
    tf_config_destroy(c);

    setenv("TENFERRO_ENGINE", "cpu,,faulty", 1);
    TF_ASSERT_STATUS(tf_config_load(&c), TF_ERR_CONFIG);
    assert_non_null(strstr(tf_error_message(), "TENFERRO_ENGINE"));
    unsetenv("TENFERRO_ENGINE");

    unsetenv("TENFERRO_CONFIG");
    TF_ASSERT_OK(tf_config_load(&c));
    if (tf_config_file(c)[0] == '\0') { /* no /etc file: the built-in choice */
        assert_string_equal(tf_config_engine_source(c), "built-in");
        assert_int_equal(tf_config_engine_count(c), 1);
        assert_string_equal(tf_config_engine_at(c, 0), "cpu");
    }
    tf_config_destroy(c);
}

static void test_plugin_path_order(void **state)
{
    (void)state;
    make_dirs("env");
    make_dirs("cfg");
    char text[512];
    snprintf(text, sizeof text, "[plugins]\npath = %s\n", in_home("cfg"));
    tf_config_destroy(load_text(text));
    setenv("TENFERRO_PLUGIN_PATH", in_home("env"), 1);
    char **dirs;
    size_t n;
    TF_ASSERT_OK(tf_plugin_path_get(&dirs, &n));
    assert_true(n >= 2);
    assert_string_equal(dirs[0], in_home("env"));
    assert_string_equal(dirs[1], in_home("cfg"));
    tf_plugin_path_free(dirs);
}

/* Writes the file with its modification time a minute back, `settle` ms ago. */
static void write_dated(const char *text, int settle)
{
    write_file(in_home("p.ini"), text);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec = t[0].tv_sec / 60 * 60 - 60;
    t[0].tv_nsec = 0;
    t[1] = t[0];
    assert_int_equal(utimensat(AT_FDCWD, in_home("p.ini"), t, 0), 0);
    setenv("TENFERRO_CONFIG", in_home("p.ini"), 1);
    usleep((useconds_t)settle * 1000);
}

/* The plugin search's first directory, asked three times, is `dir`. */
static void expect_first_dir(const char *dir_in_home)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s", dir_in_home); /* in_home's buffers are reused */
    for (int k = 0; k < 3; k++) {
        char **dirs;
        size_t n;
        TF_ASSERT_OK(tf_plugin_path_get(&dirs, &n));
        assert_true(n >= 1);
        assert_string_equal(dirs[0], dir);
        tf_plugin_path_free(dirs);
    }
}

/*
 * The loader remembers the file's [plugins] path between searches (issue
 * 19, item 5) once the file has been left alone for a second, and never
 * past a change: a rewrite of the same size with the same modification
 * time still moves the change time.
 */
static void test_plugin_path_remembered(void **state)
{
    (void)state;
    char a[256], b[256];
    snprintf(a, sizeof a, "[plugins]\npath = %s\n", in_home("d1"));
    snprintf(b, sizeof b, "[plugins]\npath = %s\n", in_home("d2"));
    write_dated(a, 1100);
    expect_first_dir(in_home("d1")); /* read, remembered, then answered from memory */
    write_dated(b, 0);
    expect_first_dir(in_home("d2"));
    write_dated(a, 1100);
    setenv("TENFERRO_ENGINE", "no,,such", 1); /* not the file's: changes nothing */
    expect_first_dir(in_home("d1"));
    unsetenv("TENFERRO_ENGINE");
}

/* ---- fallback ---- */

static char *open_with(const char *text, tf_status expected, const char *engine_name)
{
    char full[1024];
    snprintf(full, sizeof full, "[plugins]\npath = " TF_FIXTURE_DIR "\n%s", text);
    write_file(in_home("c.ini"), full);
    setenv("TENFERRO_CONFIG", in_home("c.ini"), 1);
    tf_engine *e = NULL;
    char *report = NULL;
    tf_status st = tf_engine_open_configured(&e, &report);
    if (st != expected)
        fail_msg("got %s: %s", tf_status_name(st), tf_error_message());
    assert_non_null(report);
    if (engine_name) {
        assert_string_equal(tf_engine_name(e), engine_name);
        tf_engine_destroy(e);
    }
    return report;
}

static void test_fallback(void **state)
{
    (void)state;
    char *r = open_with("[engine]\ndefault = nosuch\nfallback = faulty, cpu\n"
                        "[engine.faulty]\nfail_after = soon\n[engine.cpu]\nthreads = 1\n",
                        TF_OK, "cpu");
    assert_non_null(strstr(r, "skipped engine 'nosuch': TF_ERR_PLUGIN_NOT_FOUND"));
    assert_non_null(strstr(r, "skipped engine 'faulty': TF_ERR_VALIDATION"));
    assert_non_null(strstr(r, "fail_after wants an integer"));
    assert_non_null(strstr(r, "selected engine 'cpu' (choice 3 of 3, from file"));
    assert_true(strstr(r, "nosuch") < strstr(r, "faulty"));
    tf_config_report_free(r);

    /* the options reach the engine: a good value lets faulty start */
    r = open_with("[engine]\ndefault = faulty\nfallback = cpu\n"
                  "[engine.faulty]\nfail_after = 5\ndevice = 0\n",
                  TF_OK, "faulty");
    assert_non_null(strstr(r, "selected engine 'faulty' (choice 1 of 2"));
    assert_null(strstr(r, "skipped"));
    tf_config_report_free(r);

    /* TENFERRO_ENGINE picks from the same file's options */
    setenv("TENFERRO_ENGINE", "faulty", 1);
    r = open_with("[engine.faulty]\nextra = 1\n", TF_ERR_VALIDATION, NULL);
    assert_non_null(strstr(r, "unknown option 'extra'"));
    assert_non_null(strstr(tf_error_message(), "no configured engine could start"));
    tf_config_report_free(r);
    unsetenv("TENFERRO_ENGINE");

    r = open_with("[engine]\ndefault = nosuch\nfallback = nosuch2\n", TF_ERR_PLUGIN_NOT_FOUND,
                  NULL);
    assert_non_null(strstr(r, "skipped engine 'nosuch'"));
    assert_non_null(strstr(r, "skipped engine 'nosuch2'"));
    assert_non_null(strstr(tf_error_message(), "nosuch2"));
    tf_config_report_free(r);
}

/* device = INDEX or a substring of the device's name, per engine section */
static void test_device_by_index_and_name(void **state)
{
    (void)state;
    tf_test_log_start(TF_LOG_INFO);
    char *r =
        open_with("[engine]\ndefault = devmem\n[engine.devmem]\ndevice = mem-1\n", TF_OK, "devmem");
    assert_int_equal(tf_test_log_count(TF_LOG_INFO, "create instance"), 1);
    assert_int_equal(tf_test_log_count(TF_LOG_INFO, "on devmem-1"), 1);
    tf_config_report_free(r);
    tf_test_log_clear();
    r = open_with("[engine]\ndefault = devmem\n[engine.devmem]\ndevice = 1\n", TF_OK, "devmem");
    assert_int_equal(tf_test_log_count(TF_LOG_INFO, "on devmem-1"), 1);
    tf_config_report_free(r);
    tf_test_log_clear();
    r = open_with("[engine]\ndefault = devmem\n", TF_OK, "devmem"); /* no section: device 0 */
    assert_int_equal(tf_test_log_count(TF_LOG_INFO, "on devmem-0"), 1);
    tf_config_report_free(r);
    tf_test_log_stop();

    /* a device that is not there skips the engine, saying so */
    r = open_with("[engine]\ndefault = devmem\nfallback = cpu\n[engine.devmem]\ndevice = tpu\n",
                  TF_OK, "cpu");
    assert_non_null(strstr(r, "skipped engine 'devmem': TF_ERR_VALIDATION"));
    assert_non_null(strstr(r, "no device named like 'tpu'"));
    assert_non_null(strstr(r, "selected engine 'cpu' (choice 2 of 2"));
    tf_config_report_free(r);
    r = open_with("[engine]\ndefault = devmem\nfallback = cpu\n[engine.devmem]\ndevice = 7\n",
                  TF_OK, "cpu");
    assert_non_null(strstr(r, "no device 7"));
    tf_config_report_free(r);
}

/* ---- malformed files ---- */

static void expect_bad(const char *text, const char *line, const char *key, const char *value)
{
    write_file(in_home("bad.ini"), text);
    setenv("TENFERRO_CONFIG", in_home("bad.ini"), 1);
    tf_config *c = (tf_config *)&c;
    TF_ASSERT_STATUS(tf_config_load(&c), TF_ERR_CONFIG);
    assert_ptr_equal(c, (tf_config *)&c);
    const char *m = tf_error_message();
    char where[300];
    snprintf(where, sizeof where, "%s:%s:", in_home("bad.ini"), line);
    if (!strstr(m, where) || (key && !strstr(m, key)) || (value && !strstr(m, value)))
        fail_msg("for:\n%s\nexpected '%s', key '%s', value '%s' in: %s", text, where,
                 key ? key : "", value ? value : "", m);
}

static void test_malformed(void **state)
{
    (void)state;
    expect_bad("[engines]\ndefault = cpu\n", "2", "[engines] default", "unknown section");
    expect_bad("default = cpu\n", "1", "default", "unknown section");
    expect_bad("[engine]\n\ndefualt = cpu\n", "3", "defualt", "unknown key");
    expect_bad("[plugins]\ndirs = /opt\n", "2", "dirs", "unknown key");
    expect_bad("[engine.cpu]\nthreads = many\n", "2", "threads", "'many'");
    expect_bad("[engine.cpu]\nthreads = -1\n", "2", "threads", "'-1'");
    expect_bad("[engine.cpu]\nthreads = 2000\n", "2", "threads", "'2000'");
    expect_bad("[engine.cpu]\nthreads =\n", "2", "threads", "0..1024");
    expect_bad("[engine.vulkan]\ndevice =\n", "2", "device", "bad value");
    expect_bad("[engine]\nfallback = vulkan,,cpu\n", "2", "fallback", "'vulkan,,cpu'");
    expect_bad("[engine]\ndefault = vulkan, cpu\n", "2", "default", "one engine name");
    expect_bad("[plugins]\npath = rel/dir\n", "2", "path", "'rel/dir'");
    expect_bad("[plugins]\npath = /abs::/other\n", "2", "path", "absolute");
    expect_bad("[engine.]\nthreads = 1\n", "2", "threads", "without a name");
    expect_bad("[engine]\nthis line is not a pair\n", "2", NULL, "syntax error");
    expect_bad("[engine\ndefault = cpu\n", "1", NULL, "syntax error");
    /* the first error wins, whichever kind it is */
    expect_bad("[engine]\ndefault = cpu\nbogus = 1\nnot a pair\n", "3", "bogus", NULL);
    expect_bad("[engine]\nnot a pair\nbogus = 1\n", "2", NULL, "syntax error");
    /* a key set twice, in one section or in a repeated one */
    expect_bad("[engine]\ndefault = cpu\ndefault = vulkan\n", "3", "default",
               "duplicate key, first set on line 2");
    expect_bad("[engine]\nfallback = cpu\n[plugins]\npath = /opt\n[engine]\nfallback = x\n", "6",
               "fallback", "first set on line 2");
    expect_bad("[plugins]\npath = /opt\npath = /usr\n", "3", "path", "duplicate key");
    expect_bad("[engine.cpu]\nthreads = 1\n\nthreads = 2\n", "4", "threads", "first set on line 2");
    expect_bad("[engine.gpu]\ndevice = 0\n[engine.cpu]\n[engine.gpu]\ndevice = 1\n", "5",
               "[engine.gpu] device", "first set on line 2");
    expect_bad("[engine.gpu]\nmode = a\nmode = b\n", "3", "[engine.gpu] mode", "duplicate key");
    /* libinih's multi-line values (an indented line after a pair) are refused */
    expect_bad("[engine]\nfallback = cpu\n  vulkan\n", "3", "fallback",
               "an indented line continues the value set on line 2");
    /* limits */
    expect_bad("[engine]\nfallback = a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p\n", "2", "fallback",
               "too many engine names");
    char text[2048];
    size_t len = 0;
    for (int i = 0; i < 17; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "[engine.e%d]\nthreads = 1\n", i);
    expect_bad(text, "34", "[engine.e16] threads", "too many engine sections (at most 16)");
    len = (size_t)snprintf(text, sizeof text, "[engine.cpu]\n");
    for (int i = 0; i < 17; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "k%d = v\n", i);
    expect_bad(text, "18", "k16", "too many engine options (at most 16)");
    /* libinih reads lines of up to 198 characters; a longer one is refused, not split */
    len = (size_t)snprintf(text, sizeof text, "[plugins]\n\npath = /");
    memset(text + len, 'a', 300);
    snprintf(text + len + 300, sizeof text - len - 300, "\n[engine]\ndefault = cpu\n");
    expect_bad(text, "3", NULL, "line longer than 198 characters");
    /* tf_config_load_file reports the same way */
    tf_config *c = (tf_config *)&c;
    write_file(in_home("bad2.ini"), "[engine.cpu]\nthreads = x\n");
    TF_ASSERT_STATUS(tf_config_load_file(in_home("bad2.ini"), &c), TF_ERR_CONFIG);
    assert_non_null(strstr(tf_error_message(), ":2:"));
    TF_ASSERT_STATUS(tf_config_load_file(NULL, &c), TF_ERR_VALIDATION);
    assert_ptr_equal(c, (tf_config *)&c);
}

/* ---- what hides in the bytes of a file, and files that are not files (issue 19) ---- */

static void write_bytes(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* The named file is refused with TF_ERR_CONFIG whose message has `why`. */
static void expect_refused_file(const char *path, const char *why)
{
    setenv("TENFERRO_CONFIG", path, 1);
    tf_config *c = (tf_config *)&c;
    TF_ASSERT_STATUS(tf_config_load(&c), TF_ERR_CONFIG);
    assert_ptr_equal(c, (tf_config *)&c);
    if (!strstr(tf_error_message(), path) || !strstr(tf_error_message(), why))
        fail_msg("%s: expected '%s' in: %s", path, why, tf_error_message());
    /* the loader's own read of the file for [plugins] path ends too */
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &e));
    tf_engine_destroy(e);
}

static void expect_bad_bytes(const char *data, size_t n, const char *line, const char *why)
{
    write_bytes(in_home("bytes.ini"), data, n);
    char where[300];
    snprintf(where, sizeof where, "%s:%s: ", in_home("bytes.ini"), line);
    expect_refused_file(in_home("bytes.ini"), where);
    if (!strstr(tf_error_message(), why))
        fail_msg("expected '%s' in: %s", why, tf_error_message());
}

static void test_hostile_bytes(void **state)
{
    (void)state;
    /* a NUL inside an overlong line must not split it: "fallback = vulkan" after
       byte 199 would become a line of its own */
    char text[600];
    size_t n = (size_t)snprintf(text, sizeof text, "[engine]\ndefault = cpu ; ");
    memset(text + n, 'x', 250);
    text[n + 20] = '\0';
    n += (size_t)snprintf(text + n + 250, sizeof text - n - 250, "fallback = vulkan\n") + 250;
    expect_bad_bytes(text, n, "2", "a NUL byte at column 37");
    /* the value would read as "cpu" */
    static const char tail[] = "[engine]\ndefault = cpu\0garbage\n";
    expect_bad_bytes(tail, sizeof tail - 1, "2", "a NUL byte at column 14");
    /* ':' is libinih's other separator; the format has only '=' */
    expect_bad("[engine]\ndefault : cpu\n", "2", NULL, "found ':' first (the separator is '=')");
    expect_bad("[engine.cpu]\nthreads: 4\n", "2", NULL, "found ':' first");
    expect_bad("[plugins]\n  path : /opt\n", "2", NULL, "found ':' first");
    expect_bad("[engine.cpu]\n= 4\n", "2", NULL, "a pair without a key");
    /* libinih ignores what follows a section's ']'; only a comment may */
    expect_bad("[engine] default = vulkan\n", "1", NULL, "text after the section's ']'");
    expect_bad("[engine]x\ndefault = vulkan\n", "1", NULL, "text after the section's ']'");
    tf_config *c = load_text("[engine] ; the engines\ndefault = cpu\n");
    assert_string_equal(tf_config_engine_source(c), "file");
    tf_config_destroy(c);
    /* a last line without a newline has the same limit */
    n = (size_t)snprintf(text, sizeof text, "[plugins]\npath = /");
    memset(text + n, 'a', 191);
    expect_bad_bytes(text, n + 191, "2", "line longer than 198 characters");
    text[n + 190] = '\0'; /* 198 characters, no newline: fine */
    c = load_text(text);
    assert_int_equal(strlen(tf_config_plugin_path(c)), 191);
    tf_config_destroy(c);
    /* more than 64 KiB in all */
    static char big[70000];
    memset(big, '\n', sizeof big);
    memcpy(big, "; padding\n", 10);
    expect_bad_bytes(big, sizeof big, "65528", "longer than 65536 bytes"); /* its byte 65537 */
    /* an empty file is fine */
    c = load_text("");
    assert_string_equal(tf_config_engine_source(c), "built-in");
    tf_config_destroy(c);
}

static void test_hostile_files(void **state)
{
    (void)state;
    expect_refused_file("/dev/zero", "it is not a regular file");
    assert_int_equal(mkfifo(in_home("fifo.ini"), 0600), 0); /* no writer: open must not wait */
    expect_refused_file(in_home("fifo.ini"), "it is not a regular file");
    make_dirs("dir.ini");
    expect_refused_file(in_home("dir.ini"), "it is a directory");
    /* /dev/null is the empty configuration */
    setenv("TENFERRO_CONFIG", "/dev/null", 1);
    tf_config *c = NULL;
    TF_ASSERT_OK(tf_config_load(&c));
    assert_string_equal(tf_config_file(c), "/dev/null");
    assert_string_equal(tf_config_engine_source(c), "built-in");
    tf_config_destroy(c);
    /* a line ending in "\r\n" holds 198 characters too */
    char text[512], dir[200];
    memset(dir, 'b', sizeof dir);
    dir[0] = '/';
    dir[191] = '\0';
    snprintf(text, sizeof text, "[plugins]\r\npath = %s\r\n", dir);
    c = load_text(text);
    assert_string_equal(tf_config_plugin_path(c), dir);
    tf_config_destroy(c);
}

static void test_accepted_forms(void **state)
{
    (void)state;
    /* a line of 198 characters (libinih's limit) with a path of 191 */
    char text[512], dir[200];
    memset(dir, 'a', sizeof dir);
    dir[0] = '/';
    dir[191] = '\0';
    snprintf(text, sizeof text, "[plugins]\npath = %s\n[engine]  \n  default = cpu ; inline\n",
             dir);
    assert_int_equal(strlen("path = ") + strlen(dir), 198);
    tf_config *c = load_text(text);
    assert_string_equal(tf_config_plugin_path(c), dir);
    assert_int_equal(tf_config_engine_count(c), 1);
    assert_string_equal(tf_config_engine_at(c, 0), "cpu");
    tf_config_destroy(c);

    /* 16 engines in all, duplicates dropped; TENFERRO_ENGINE has the same limit */
    c = load_text("[engine]\ndefault = cpu\nfallback = a,b,c,d,e,f,g,h,i,j,k,l,m,n,cpu\n");
    assert_int_equal(tf_config_engine_count(c), 15);
    tf_config_destroy(c);
    setenv("TENFERRO_ENGINE", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p", 1);
    TF_ASSERT_OK(tf_config_load(&c));
    assert_int_equal(tf_config_engine_count(c), 16);
    tf_config_destroy(c);
    setenv("TENFERRO_ENGINE", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", 1);
    c = (tf_config *)&c;
    TF_ASSERT_STATUS(tf_config_load(&c), TF_ERR_CONFIG);
    assert_ptr_equal(c, (tf_config *)&c);
    assert_non_null(strstr(tf_error_message(), "TENFERRO_ENGINE: too many engine names"));
}

/* ---- path safety ---- */

static bool skipped_has(const char *path, const char *reason)
{
    tf_plugin_path_skip *s;
    size_t n;
    TF_ASSERT_OK(tf_plugin_path_skipped(&s, &n));
    bool found = false;
    for (size_t i = 0; i < n; i++)
        found |= strcmp(s[i].path, path) == 0 && strstr(s[i].reason, reason) != NULL;
    tf_plugin_path_skipped_free(s, n);
    return found;
}

static bool path_has(const char *dir)
{
    char **dirs;
    size_t n;
    TF_ASSERT_OK(tf_plugin_path_get(&dirs, &n));
    bool found = false;
    for (size_t i = 0; i < n; i++)
        found |= strcmp(dirs[i], dir) == 0;
    tf_plugin_path_free(dirs);
    return found;
}

static void test_unsafe_and_relative_dirs(void **state)
{
    (void)state;
    char open_dir[256], group_dir[256], safe_dir[256], env[900];
    snprintf(open_dir, sizeof open_dir, "%s", in_home("open"));
    snprintf(group_dir, sizeof group_dir, "%s", in_home("group"));
    snprintf(safe_dir, sizeof safe_dir, "%s", in_home("safe"));
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(mkdir(group_dir, 0700), 0);
    assert_int_equal(mkdir(safe_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0777), 0); /* chmod: umask must not interfere */
    assert_int_equal(chmod(group_dir, 0775), 0);
    snprintf(env, sizeof env, "relative/dir:%s:%s:%s", open_dir, group_dir, safe_dir);
    setenv("TENFERRO_PLUGIN_PATH", env, 1);
    assert_true(path_has(safe_dir));
    assert_false(path_has(open_dir));
    assert_false(path_has(group_dir));
    assert_false(path_has("relative/dir"));
    assert_true(skipped_has("relative/dir", "relative directory (from TENFERRO_PLUGIN_PATH)"));
    assert_true(skipped_has(open_dir, "writable by others (mode 777)"));
    assert_true(skipped_has(group_dir, "writable by its group (mode 775)"));
    assert_false(skipped_has(safe_dir, ""));

    /* the same rule for the configuration file's folders */
    unsetenv("TENFERRO_PLUGIN_PATH");
    char text[600];
    snprintf(text, sizeof text, "[plugins]\npath = %s:%s\n", open_dir, safe_dir);
    tf_config_destroy(load_text(text));
    assert_true(path_has(safe_dir));
    assert_false(path_has(open_dir));
    assert_true(skipped_has(open_dir, "from the configuration file"));
}

static void test_unsafe_file(void **state)
{
    (void)state;
    char dir[256], file[320], cmd[1400];
    snprintf(dir, sizeof dir, "%s", in_home("plugins"));
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(chmod(dir, 0755), 0);
    snprintf(file, sizeof file, "%s/tenferro-engine-copied.so", dir);
    snprintf(cmd, sizeof cmd, "cp " TF_FIXTURE_DIR "/tenferro-engine-faulty.so %s", file);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(chmod(file, 0666), 0);
    setenv("TENFERRO_PLUGIN_PATH", dir, 1);

    tf_plugin *p = NULL;
    TF_ASSERT_STATUS(tf_plugin_load("copied", &p), TF_ERR_PLUGIN_NOT_FOUND);
    assert_non_null(strstr(tf_error_message(), "skipped unsafe"));
    assert_non_null(strstr(tf_error_message(), "writable by others"));
    assert_true(skipped_has(file, "unsafe plugin file: writable by others (mode 666)"));
    tf_plugin_candidate *c;
    size_t n;
    TF_ASSERT_OK(tf_plugin_scan(&c, &n));
    for (size_t i = 0; i < n; i++)
        assert_null(strstr(c[i].path, "tenferro-engine-copied.so"));
    tf_plugin_scan_free(c, n);

    /* once only its owner may write it, the same file loads */
    assert_int_equal(chmod(file, 0644), 0);
    assert_false(skipped_has(file, ""));
    TF_ASSERT_OK(tf_plugin_load("copied", &p));
    assert_string_equal(tf_plugin_name(p), "faulty");
}

/* A copy of the faulty fixture as <dir>/tenferro-engine-<name>.so, mode 644, in a new folder
   of the given mode. */
static void plant_engine(const char *dir, mode_t mode, const char *name)
{
    char cmd[1400];
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(chmod(dir, mode), 0);
    snprintf(cmd, sizeof cmd,
             "cp " TF_FIXTURE_DIR "/tenferro-engine-faulty.so %s/tenferro-engine-%s.so && "
             "chmod 644 %s/tenferro-engine-%s.so",
             dir, name, dir, name);
    assert_int_equal(system(cmd), 0);
}

/*
 * A configuration read by tf_config_load_file searches its own [plugins]
 * path when it opens its engines, as the same file does through
 * TENFERRO_CONFIG, and not the path of the file in use (issue 20, item 1).
 */
static void test_load_file_plugin_path(void **state)
{
    (void)state;
    char mine[256], other[256], good[256], in_use[256], text[700];
    snprintf(mine, sizeof mine, "%s", in_home("mine"));
    snprintf(other, sizeof other, "%s", in_home("other"));
    snprintf(good, sizeof good, "%s", in_home("good.ini"));
    snprintf(in_use, sizeof in_use, "%s", in_home("in-use.ini"));
    plant_engine(mine, 0755, "mine");
    plant_engine(other, 0755, "theirs");
    snprintf(text, sizeof text, "[engine]\ndefault = mine\nfallback = cpu\n[plugins]\npath = %s\n",
             mine);
    write_file(good, text);
    snprintf(text, sizeof text, "[engine]\ndefault = theirs\n[plugins]\npath = %s\n", other);
    write_file(in_use, text);
    setenv("TENFERRO_CONFIG", in_use, 1);

    tf_config *c = NULL;
    TF_ASSERT_OK(tf_config_load_file(good, &c));
    assert_string_equal(tf_config_plugin_path(c), mine);
    tf_engine *e = NULL;
    char *report = NULL;
    TF_ASSERT_OK(tf_config_open_engine(c, &e, &report));
    assert_string_equal(tf_engine_name(e), "faulty");
    assert_non_null(strstr(report, "selected engine 'mine' (choice 1 of 2, from file"));
    assert_non_null(strstr(report, good));
    assert_null(strstr(report, "skipped"));
    tf_engine_destroy(e);
    tf_config_report_free(report);
    tf_config_destroy(c);

    /* the file in use is not searched for a configuration of another file */
    write_file(good, "[engine]\ndefault = theirs\nfallback = cpu\n");
    TF_ASSERT_OK(tf_config_load_file(good, &c));
    assert_string_equal(tf_config_plugin_path(c), "");
    TF_ASSERT_OK(tf_config_open_engine(c, &e, &report));
    assert_string_equal(tf_engine_name(e), "cpu");
    assert_non_null(strstr(report, "skipped engine 'theirs': TF_ERR_PLUGIN_NOT_FOUND"));
    assert_null(strstr(report, other));
    tf_engine_destroy(e);
    tf_config_report_free(report);
    tf_config_destroy(c);

    /* the file in use, through tf_engine_open_configured, finds its own */
    TF_ASSERT_OK(tf_engine_open_configured(&e, &report));
    assert_non_null(strstr(report, "selected engine 'theirs' (choice 1 of 1, from file"));
    tf_engine_destroy(e);
    tf_config_report_free(report);
}

/*
 * A plugin folder the group may write is skipped, and a lookup by name says
 * so with the reason; the warning is logged once however many searches
 * meet it (issue 20, item 2).
 */
static void test_unsafe_folder_reason(void **state)
{
    (void)state;
    char group[256], why[400];
    snprintf(group, sizeof group, "%s", in_home("group-plugins"));
    plant_engine(group, 0775, "grouped");
    setenv("TENFERRO_PLUGIN_PATH", group, 1);
    tf_test_log_start(TF_LOG_WARN);
    tf_plugin *p = (tf_plugin *)&p;
    TF_ASSERT_STATUS(tf_plugin_load("grouped", &p), TF_ERR_PLUGIN_NOT_FOUND);
    assert_ptr_equal(p, (tf_plugin *)&p);
    snprintf(why, sizeof why,
             "skipped %s: unsafe directory (from TENFERRO_PLUGIN_PATH): writable by its group "
             "(mode 775)",
             group);
    if (!strstr(tf_error_message(), why))
        fail_msg("'%s' lacks '%s'", tf_error_message(), why);
    assert_non_null(strstr(tf_error_message(), "no engine plugin named 'grouped'"));
    TF_ASSERT_STATUS(tf_plugin_load("grouped", &p), TF_ERR_PLUGIN_NOT_FOUND);
    assert_non_null(strstr(tf_error_message(), why)); /* every refusal says why */
    char **dirs;
    size_t n;
    TF_ASSERT_OK(tf_plugin_path_get(&dirs, &n));
    tf_plugin_path_free(dirs);
    tf_engine *e = NULL;
    TF_ASSERT_STATUS(tf_engine_open("grouped", 1, &e), TF_ERR_PLUGIN_NOT_FOUND);
    snprintf(why, sizeof why, "plugin search path: skipped %s: unsafe directory", group);
    assert_int_equal(tf_test_log_count(TF_LOG_WARN, why), 1);
    assert_int_equal(tf_test_log_count(TF_LOG_WARN, "skipped"), 1);
    tf_test_log_stop();

    /* the same folder named by a configuration file: its origin in the reason */
    unsetenv("TENFERRO_PLUGIN_PATH");
    char text[400], cfg[256];
    snprintf(cfg, sizeof cfg, "%s", in_home("group.ini"));
    snprintf(text, sizeof text, "[engine]\ndefault = grouped\n[plugins]\npath = %s\n", group);
    write_file(cfg, text);
    tf_config *c = NULL;
    TF_ASSERT_OK(tf_config_load_file(cfg, &c));
    char *report = NULL;
    TF_ASSERT_STATUS(tf_config_open_engine(c, &e, &report), TF_ERR_PLUGIN_NOT_FOUND);
    assert_non_null(strstr(report, "unsafe directory (from the configuration file): writable by "
                                   "its group (mode 775)"));
    tf_config_report_free(report);
    tf_config_destroy(c);

    /* once only its owner may write the folder, the engine loads */
    assert_int_equal(chmod(group, 0755), 0);
    setenv("TENFERRO_PLUGIN_PATH", group, 1);
    TF_ASSERT_OK(tf_plugin_load("grouped", &p));
    assert_string_equal(tf_plugin_name(p), "faulty");
}

/*
 * Folders above a plugin folder: one that others (or the group) may write
 * without the sticky bit, or that another user owns, lets them swap the
 * folder below; a sticky one (like /tmp, where this very test lives) does not.
 */
static void test_unsafe_ancestors(void **state)
{
    (void)state;
    static const char *const dirs[] = {"open",           "open/plugins", "sticky",
                                       "sticky/plugins", "group",        "group/plugins",
                                       "safe",           "safe/real",    "safe/pl"};
    static const mode_t modes[] = {0777, 0755, 01777, 0755, 0775, 0755, 0755, 0755, 0755};
    char d[9][256];
    for (size_t i = 0; i < 9; i++) {
        snprintf(d[i], sizeof d[i], "%s", in_home(dirs[i]));
        assert_int_equal(mkdir(d[i], 0700), 0);
        assert_int_equal(chmod(d[i], modes[i]), 0);
    }
    const char *open_dir = d[0], *open_pl = d[1], *sticky_pl = d[3], *group_dir = d[4],
               *group_pl = d[5], *real = d[7], *pl = d[8];
    char link_out[256], link_in[256], env[2048], why[600];
    snprintf(link_out, sizeof link_out, "%s", in_home("safe/link-out")); /* -> open/plugins */
    snprintf(link_in, sizeof link_in, "%s", in_home("open/link-in"));    /* -> safe/real */
    assert_int_equal(symlink(open_pl, link_out), 0);
    assert_int_equal(symlink(real, link_in), 0);
    snprintf(env, sizeof env, "%s:%s:%s:%s:%s:%s", open_pl, group_pl, sticky_pl, link_out, link_in,
             real);
    setenv("TENFERRO_PLUGIN_PATH", env, 1);

    tf_test_log_start(TF_LOG_WARN); /* each search below meets the same skips */
    assert_true(path_has(sticky_pl));
    assert_true(path_has(real));
    assert_false(path_has(open_pl));
    assert_false(path_has(group_pl));
    assert_false(path_has(link_out));
    assert_false(path_has(link_in));
    snprintf(why, sizeof why,
             "unsafe directory (from TENFERRO_PLUGIN_PATH): the folder %s on its way is "
             "writable by others and not sticky (mode 0777)",
             open_dir);
    assert_true(skipped_has(open_pl, why));
    assert_true(skipped_has(link_in, why));  /* the link is an entry of that folder */
    assert_true(skipped_has(link_out, why)); /* the link leads through it */
    snprintf(why, sizeof why, "the folder %s on its way is writable by its group and not sticky",
             group_dir);
    assert_true(skipped_has(group_pl, why));
    assert_false(skipped_has(sticky_pl, ""));

    /* searches warn through the log callback, once per folder and reason however many
       searches skip it; the report does not repeat it */
    char **got;
    size_t n;
    TF_ASSERT_OK(tf_plugin_path_get(&got, &n));
    tf_plugin_path_free(got);
    snprintf(why, sizeof why, "plugin search path: skipped %s: unsafe directory", open_pl);
    assert_int_equal(tf_test_log_count(TF_LOG_WARN, why), 1);
    assert_int_equal(tf_test_log_count(TF_LOG_WARN, "skipped"), 4);
    tf_test_log_clear();
    assert_true(skipped_has(open_pl, "unsafe"));
    assert_int_equal(tf_test_log_count(-1, ""), 0);

    /* a plugin file reached through a link into that folder */
    char target[320], file[320], cmd[1400];
    snprintf(target, sizeof target, "%s/engine.so", open_pl);
    snprintf(file, sizeof file, "%s/tenferro-engine-linked.so", pl);
    snprintf(cmd, sizeof cmd, "cp " TF_FIXTURE_DIR "/tenferro-engine-faulty.so %s", target);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(chmod(target, 0644), 0);
    assert_int_equal(symlink(target, file), 0);
    setenv("TENFERRO_PLUGIN_PATH", pl, 1);
    tf_plugin *p = (tf_plugin *)&p;
    TF_ASSERT_STATUS(tf_plugin_load("linked", &p), TF_ERR_PLUGIN_NOT_FOUND);
    assert_ptr_equal(p, (tf_plugin *)&p);
    assert_non_null(strstr(tf_error_message(), "skipped unsafe"));
    assert_non_null(strstr(tf_error_message(), open_dir));
    assert_int_equal(tf_test_log_count(TF_LOG_WARN, "skipped unsafe"), 1);
    snprintf(why, sizeof why, "unsafe plugin file: the folder %s on its way", open_dir);
    assert_true(skipped_has(file, why));
    tf_plugin_candidate *c;
    TF_ASSERT_OK(tf_plugin_scan(&c, &n));
    for (size_t i = 0; i < n; i++)
        assert_null(strstr(c[i].path, "tenferro-engine-linked.so"));
    tf_plugin_scan_free(c, n);
    tf_test_log_stop();

    /* the sticky bit makes the same tree safe */
    assert_int_equal(chmod(open_dir, 01777), 0);
    assert_false(skipped_has(file, ""));
    TF_ASSERT_OK(tf_plugin_load("linked", &p));
    assert_string_equal(tf_plugin_name(p), "faulty");
    setenv("TENFERRO_PLUGIN_PATH", env, 1);
    assert_true(path_has(open_pl));
    assert_true(path_has(link_in));
    assert_true(path_has(link_out));

    /* a folder on the way owned by another user (only root may give one away) */
    if (geteuid() == 0) {
        assert_int_equal(chown(open_dir, 4242, (gid_t)-1), 0);
        snprintf(why, sizeof why,
                 "the folder %s on its way is owned by uid 4242, neither the user nor root",
                 open_dir);
        assert_true(skipped_has(open_pl, why));
        assert_false(path_has(open_pl));
    }
}

static int run_status(const char *cmd, const char **out);

/*
 * The installed plugin folder (<libdir>/tenferro/plugins) is judged only
 * below the library's own folder: a copy of the library and the cpu engine
 * in a tree under a folder that others may write still finds its engine
 * (whoever could swap that tree could swap the library too), while the same
 * folder named in TENFERRO_PLUGIN_PATH is refused for it.
 */
static void test_library_folder_trust(void **state)
{
    (void)state;
    Dl_info info;
    tf_status (*fn)(tf_config **) = tf_config_load;
    void *addr; /* a function's address as dladdr wants it (ISO C has no cast for it) */
    memcpy(&addr, &fn, sizeof addr);
    assert_true(dladdr(addr, &info) && info.dli_fname);
    const char *soname = strrchr(info.dli_fname, '/');
    assert_non_null(soname);
    make_dirs("shared/prefix/lib/tenferro/plugins");
    assert_int_equal(chmod(in_home("shared"), 0777), 0);
    char lib[300], plugins[340], cmd[2048];
    snprintf(lib, sizeof lib, "%s", in_home("shared/prefix/lib"));
    snprintf(plugins, sizeof plugins, "%s/tenferro/plugins", lib);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s%s' && cp '%s' '%s/'", info.dli_fname, lib, soname,
             TF_CPU_PLUGIN, plugins);
    assert_int_equal(system(cmd), 0);

    snprintf(cmd, sizeof cmd,
             "TENFERRO_ENGINE=cpu TENFERRO_PLUGIN_PATH=%s LD_LIBRARY_PATH=%s " TF_CLI_PATH
             " info --json",
             plugins, lib);
    const char *out;
    assert_int_equal(run_status(cmd, &out), 0);
    char expect[900];
    snprintf(expect, sizeof expect, "\"plugin_path\": [\"%s\"]", plugins);
    if (!strstr(out, expect))
        fail_msg("expected %s in:\n%s", expect, out);
    assert_non_null(strstr(out, "\"selected_engine\": \"cpu\""));
    snprintf(expect, sizeof expect,
             "\"plugin_path_skipped\": [{\"path\": \"%s\", \"reason\": \"unsafe directory "
             "(from TENFERRO_PLUGIN_PATH): the folder %s on its way is writable by others",
             plugins, in_home("shared"));
    if (!strstr(out, expect))
        fail_msg("expected %s in:\n%s", expect, out);

    /* below the library's folder the rules hold: the plugin folder itself */
    assert_int_equal(chmod(plugins, 0777), 0);
    snprintf(cmd, sizeof cmd, "LD_LIBRARY_PATH=%s " TF_CLI_PATH " info --json", lib);
    assert_int_equal(run_status(cmd, &out), 0);
    assert_non_null(strstr(out, "\"plugin_path\": []"));
    snprintf(expect, sizeof expect,
             "{\"path\": \"%s\", \"reason\": \"unsafe directory (from the library's folder): "
             "writable by others (mode 777)\"}",
             plugins);
    if (!strstr(out, expect))
        fail_msg("expected %s in:\n%s", expect, out);
}

/* ---- the command ---- */

static char *run(const char *cmd)
{
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    buf[len] = '\0';
    int status = pclose(f);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    return buf;
}

/* popen's exit status, the output in *out (a static buffer) */
static int run_status(const char *cmd, const char **out)
{
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    static char buf[1 << 14];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    buf[len] = '\0';
    int status = pclose(f);
    assert_true(WIFEXITED(status));
    *out = buf;
    return WEXITSTATUS(status);
}

/* The example app of docs/apps.md, built from the page's own text. */
static void test_example_app(void **state)
{
    (void)state;
    write_file(in_home("c.ini"), "[plugins]\npath = " TF_FIXTURE_DIR "\n[engine]\n"
                                 "default = nosuch\nfallback = cpu\n");
    char cmd[600];
    const char *out;
    snprintf(cmd, sizeof cmd, "TENFERRO_CONFIG=%s " TF_APPS_EXAMPLE_PATH " 2>&1", in_home("c.ini"));
    assert_int_equal(run_status(cmd, &out), 0);
    assert_non_null(strstr(out, "skipped engine 'nosuch': TF_ERR_PLUGIN_NOT_FOUND"));
    assert_non_null(strstr(out, "selected engine 'cpu' (choice 2 of 2"));
    assert_non_null(strstr(out, "sum of squares on cpu: 30\n"));

    snprintf(cmd, sizeof cmd,
             "TENFERRO_CONFIG=%s TENFERRO_ENGINE=nosuch " TF_APPS_EXAMPLE_PATH " 2>&1",
             in_home("c.ini"));
    assert_int_equal(run_status(cmd, &out), 1);
    assert_non_null(strstr(out, "sumsq: no engine: no configured engine could start"));
}

static void test_cli_reports_configuration(void **state)
{
    (void)state;
    write_file(in_home("c.ini"), "[plugins]\npath = " TF_FIXTURE_DIR "\n[engine]\n"
                                 "default = nosuch\nfallback = cpu\n");
    char cmd[600], expect[600];
    snprintf(cmd, sizeof cmd,
             "TENFERRO_CONFIG=%s TENFERRO_PLUGIN_PATH=rel " TF_CLI_PATH " info --json",
             in_home("c.ini"));
    const char *out = run(cmd);
    snprintf(expect, sizeof expect, "\"config\": {\"file\": \"%s\"", in_home("c.ini"));
    assert_non_null(strstr(out, expect));
    assert_non_null(
        strstr(out, "\"engines\": [\"nosuch\", \"cpu\"], \"selected_engine\": \"cpu\""));
    assert_non_null(strstr(out, "\"plugin_path_skipped\": [{\"path\": \"rel\""));

    snprintf(cmd, sizeof cmd, "TENFERRO_CONFIG=%s " TF_CLI_PATH " info", in_home("c.ini"));
    out = run(cmd);
    snprintf(expect, sizeof expect, "configuration file: %s\n", in_home("c.ini"));
    assert_non_null(strstr(out, expect));
    assert_non_null(strstr(out, "selected engine: cpu\n"));
    assert_non_null(strstr(out, "  skipped engine 'nosuch': TF_ERR_PLUGIN_NOT_FOUND"));

    /* every skipped search-path entry, with its reason, in both forms */
    make_dirs("open/plugins");
    assert_int_equal(chmod(in_home("open"), 0777), 0);
    snprintf(cmd, sizeof cmd, "TENFERRO_CONFIG=%s TENFERRO_PLUGIN_PATH=rel:%s " TF_CLI_PATH " info",
             in_home("c.ini"), in_home("open/plugins"));
    out = run(cmd);
    assert_non_null(strstr(out, "skipped on the plugin search path:\n  rel: relative directory "
                                "(from TENFERRO_PLUGIN_PATH)"));
    snprintf(expect, sizeof expect,
             "\n  %s: unsafe directory (from TENFERRO_PLUGIN_PATH): the folder %s on its way "
             "is writable by others and not sticky (mode 0777)\n",
             in_home("open/plugins"), in_home("open"));
    assert_non_null(strstr(out, expect));
    snprintf(cmd, sizeof cmd,
             "TENFERRO_CONFIG=%s TENFERRO_PLUGIN_PATH=%s " TF_CLI_PATH " info --json",
             in_home("c.ini"), in_home("open/plugins"));
    out = run(cmd);
    snprintf(expect, sizeof expect,
             "\"plugin_path_skipped\": [{\"path\": \"%s\", \"reason\": \"unsafe directory "
             "(from TENFERRO_PLUGIN_PATH): the folder %s on its way",
             in_home("open/plugins"), in_home("open"));
    assert_non_null(strstr(out, expect));

    /* a bad file: the error with file, line and key; still exit 0 (info reports) */
    write_file(in_home("bad.ini"), "[engine]\nfallback = cpu\nfalback = vulkan\n");
    snprintf(cmd, sizeof cmd, "TENFERRO_CONFIG=%s " TF_CLI_PATH " info", in_home("bad.ini"));
    out = run(cmd);
    snprintf(expect, sizeof expect, "configuration: error: %s:3: [engine] falback: unknown key",
             in_home("bad.ini"));
    assert_non_null(strstr(out, expect));
    snprintf(cmd, sizeof cmd, "TENFERRO_CONFIG=%s " TF_CLI_PATH " info --json", in_home("bad.ini"));
    out = run(cmd);
    snprintf(expect, sizeof expect, "\"error\": \"%s:3: [engine] falback: unknown key",
             in_home("bad.ini"));
    assert_non_null(strstr(out, expect));

    snprintf(cmd, sizeof cmd, "TENFERRO_CONFIG=%s " TF_CLI_PATH " bench --quick dispatch 2>&1",
             in_home("c.ini"));
    out = run(cmd);
    assert_non_null(strstr(out, "tenferro: skipped engine 'nosuch'"));
    assert_non_null(strstr(out, "bench: engine 'cpu'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_search_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_free_older_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_named_file_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_system_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_list_and_overrides, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plugin_path_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plugin_path_remembered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fallback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_by_index_and_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_accepted_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsafe_and_relative_dirs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsafe_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_file_plugin_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsafe_folder_reason, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsafe_ancestors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_library_folder_trust, setup, teardown),
        cmocka_unit_test_setup_teardown(test_example_app, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli_reports_configuration, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
