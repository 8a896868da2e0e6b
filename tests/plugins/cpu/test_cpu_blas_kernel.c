/*
 * test_cpu_blas_kernel.c - the CPU engine's warning about OpenBLAS's kernel.
 *
 * OpenBLAS's DYNAMIC_ARCH build picks its kernels for the processor when it is
 * loaded, and on one it does not know it falls back to a kernel of the
 * processors before AVX (Debian 12's 0.3.21 takes Prescott on an Emerald Rapids
 * Xeon), which makes matrix products several times slower. Creating a CPU
 * engine then logs one TF_LOG_WARN that names the kernel and the
 * OPENBLAS_CORETYPE that fixes it, and logs nothing of the kind otherwise.
 *
 * The rule is checked from what this process sees: OpenBLAS's kernel (the
 * engine's device driver string, "OpenBLAS <version> <kernel>") and the
 * processor's AVX2 and FMA. CTest runs the program twice: as the environment
 * has it, and with OPENBLAS_CORETYPE=Prescott, so that on any processor with
 * AVX2 the warning itself is seen.
 */
#include <stdio.h>
#include <string.h>

#include <tenferro/engine.h>
#include <tenferro/system.h>

#include "tf_ref.h"

static int g_warnings;
static char g_message[512];

static void sink(void *user, tf_log_level level, const char *message)
{
    (void)user;
    if (level == TF_LOG_WARN && strstr(message, "OPENBLAS_CORETYPE") != NULL) {
        g_warnings++;
        snprintf(g_message, sizeof g_message, "%s", message);
    }
}

/* The kernel OpenBLAS chose: the last word of the CPU device's driver string. */
static const char *kernel_of(const tf_device_info *info)
{
    const char *space = strrchr(info->driver, ' ');
    return space != NULL ? space + 1 : info->driver;
}

static int pre_avx(const char *kernel)
{
    static const char *const old[] = {"Katmai", "Coppermine", "Northwood", "Prescott",   "Banias",
                                      "Atom",   "Core2",      "Penryn",    "Dunnington", "Nehalem"};
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++) {
        if (strcmp(kernel, old[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

static void test_warning_iff_pre_avx_kernel(void **state)
{
    (void)state;
    tf_plugin *cpu = NULL;
    TF_ASSERT_OK(tf_plugin_load("cpu", &cpu));
    tf_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TF_ASSERT_OK(tf_plugin_device_info(cpu, 0, &info));
    const char *kernel = kernel_of(&info);
    int want = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    want = pre_avx(kernel) && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    tf_log_set(sink, NULL, TF_LOG_DEBUG);
    for (int k = 0; k < 2; k++) { /* once per engine made */
        tf_engine *e = NULL;
        TF_ASSERT_OK(tf_engine_create(cpu, NULL, &e));
        tf_engine_destroy(e);
    }
    tf_log_set(NULL, NULL, TF_LOG_ERROR);
    print_message("OpenBLAS kernel %s (driver \"%s\"): %d warnings\n", kernel, info.driver,
                  g_warnings);
    assert_int_equal(g_warnings, want ? 2 : 0);
    if (want) {
        assert_non_null(strstr(g_message, kernel));
        assert_true(strstr(g_message, "OPENBLAS_CORETYPE=SkylakeX") != NULL ||
                    strstr(g_message, "OPENBLAS_CORETYPE=Haswell") != NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warning_iff_pre_avx_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
