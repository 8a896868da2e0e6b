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
#define _GNU_SOURCE /* mkdtemp, setenv, popen */

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tf_test.h"

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
    tf_config_free(c);
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
    tf_config_free(c);

    setenv("TENFERRO_ENGINE", "cpu,faulty", 1);
    TF_ASSERT_OK(tf_config_load(&c));
    assert_string_equal(tf_config_engine_source(c), "TENFERRO_ENGINE");
    assert_int_equal(tf_config_engine_count(c), 2);
    assert_string_equal(tf_config_engine_at(c, 0), "cpu");
    assert_string_equal(tf_config_engine_at(c, 1), "faulty");
    tf_config_free(c);

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
    tf_config_free(c);
}

static void test_plugin_path_order(void **state)
{
    (void)state;
    make_dirs("env");
    make_dirs("cfg");
    char text[512];
    snprintf(text, sizeof text, "[plugins]\npath = %s\n", in_home("cfg"));
    tf_config_free(load_text(text));
    setenv("TENFERRO_PLUGIN_PATH", in_home("env"), 1);
    char **dirs;
    size_t n;
    TF_ASSERT_OK(tf_plugin_path_get(&dirs, &n));
    assert_true(n >= 2);
    assert_string_equal(dirs[0], in_home("env"));
    assert_string_equal(dirs[1], in_home("cfg"));
    tf_plugin_path_free(dirs);
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
    /* tf_config_load_file reports the same way */
    tf_config *c = (tf_config *)&c;
    write_file(in_home("bad2.ini"), "[engine.cpu]\nthreads = x\n");
    TF_ASSERT_STATUS(tf_config_load_file(in_home("bad2.ini"), &c), TF_ERR_CONFIG);
    assert_non_null(strstr(tf_error_message(), ":2:"));
    TF_ASSERT_STATUS(tf_config_load_file(NULL, &c), TF_ERR_VALIDATION);
    assert_ptr_equal(c, (tf_config *)&c);
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
    tf_config_free(load_text(text));
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

static void test_cli_reports_configuration(void **state)
{
    (void)state;
    write_file(in_home("c.ini"), "[plugins]\npath = " TF_FIXTURE_DIR "\n[engine]\n"
                                 "default = nosuch\nfallback = cpu\n");
    char cmd[600], expect[400];
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
        cmocka_unit_test_setup_teardown(test_named_file_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_list_and_overrides, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plugin_path_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fallback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsafe_and_relative_dirs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsafe_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli_reports_configuration, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
