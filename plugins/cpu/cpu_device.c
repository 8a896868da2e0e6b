/*
 * cpu_device.c - the machine the CPU engine runs on, and what create() is asked:
 * the online processors, the last-level cache (the default stream threshold),
 * the device's description (model name, OpenBLAS's version and kernel), and the
 * options of create() with their defaults (cpu_internal.h, cpu_options).
 */
#define _POSIX_C_SOURCE 200809L

#include <cblas.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_internal.h"

/* ---- the machine ------------------------------------------------------------------ */

static uint32_t online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1u;
}

/* One line of a sysfs file into buf (its newline dropped); 0 when it cannot be read. */
static int read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/*
 * Bytes of the outermost data cache CPU 0 shares, as Linux describes it
 * (/sys/devices/system/cpu/cpu0/cache/index*: level, type, size such as
 * "32768K"), or 0. The kernel's figure is the cache these cores really share:
 * glibc's sysconf may report a whole package's (320 MiB in a 2-core VM on an
 * EPYC whose cores share 32 MiB).
 */
static size_t sysfs_last_level_cache(void)
{
    size_t best = 0;
    long best_level = 0;
    for (int i = 0; i < 16; i++) {
        char path[96], buf[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (!read_line(path, buf, sizeof buf)) {
            break;
        }
        long level = strtol(buf, NULL, 10);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (level < best_level || !read_line(path, buf, sizeof buf) ||
            strcmp(buf, "Instruction") == 0) {
            continue;
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        char *end = NULL;
        unsigned long long v = read_line(path, buf, sizeof buf) ? strtoull(buf, &end, 10) : 0;
        size_t unit = end == NULL ? 0 : *end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : 1;
        if (v > 0 && unit > 0 && v <= SIZE_MAX / unit) {
            best = (size_t)v * unit;
            best_level = level;
        }
    }
    return best;
}

/*
 * Bytes of the last-level cache: the kernel's figure (sysfs), else the C
 * library's (glibc: from CPUID), else 32 MiB. An elementwise job touching more
 * than this streams its output (see flat_piece in cpu_elementwise_run.c).
 */
static size_t last_level_cache_bytes(void)
{
    size_t sysfs = sysfs_last_level_cache();
    if (sysfs > 0) {
        return sysfs;
    }
    long n = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
    n = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (n <= 0) {
        n = sysconf(_SC_LEVEL2_CACHE_SIZE);
    }
#endif
    return n > 0 ? (size_t)n : (size_t)32 << 20;
}

/* "model name" of /proc/cpuinfo, or "Host CPU" where there is none. */
static void cpu_model_name(char *out, size_t size)
{
    char line[512];
    snprintf(out, size, "Host CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) != 0) {
            continue;
        }
        const char *v = strchr(line, ':');
        if (v == NULL) {
            continue;
        }
        v += strspn(v + 1, " \t") + 1;
        size_t len = strcspn(v, "\r\n");
        while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t')) {
            len--;
        }
        if (len > 0) {
            snprintf(out, size, "%.*s", (int)len, v);
        }
        break;
    }
    fclose(f);
}

void tf__cpu_device_describe(tf_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = (uint32_t)sizeof *info;
    info->type = TF_DEVICE_CPU;
    info->flags = TF_DEVICE_FLAG_F64 | TF_DEVICE_FLAG_HOST_MEMORY;
    info->compute_units = online_cpus();
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    info->memory_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    cpu_model_name(info->name, sizeof info->name);
    /*
     * "OpenBLAS <version> <kernel>": the kernel OpenBLAS chose for this
     * processor matters most (it decides GEMM speed) and must not be cut off
     * by the 63 characters of the field, which the whole build configuration
     * ("OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY SkylakeX ...")
     * would overflow. The version is the configuration's first word after
     * the name.
     */
    const char *config = openblas_get_config(), *core = openblas_get_corename();
    config = config != NULL ? config : "";
    if (strncmp(config, "OpenBLAS ", 9) == 0) {
        config += 9;
    }
    int vlen = (int)strcspn(config, " ");
    snprintf(info->driver, sizeof info->driver, "OpenBLAS %.*s %s", vlen, config,
             core != NULL ? core : "");
}

/*
 * OpenBLAS's kernels of the processors before AVX: what its DYNAMIC_ARCH build falls
 * back to on a processor it does not know (0.3.21 on an Emerald Rapids Xeon, family 6
 * model 207, chooses Prescott).
 */
static int pre_avx_kernel(const char *core)
{
    static const char *const old[] = {"Katmai",  "Coppermine", "Northwood", "Prescott",
                                      "Banias",  "Atom",       "Core2",     "Penryn",
                                      "Dunnington", "Nehalem"};
    for (size_t i = 0; core != NULL && i < sizeof old / sizeof old[0]; i++) {
        if (strcmp(core, old[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

void tf__cpu_blas_check(const tf_host_api *host)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    const char *core = openblas_get_corename();
    if (!pre_avx_kernel(core) || !__builtin_cpu_supports("avx2") ||
        !__builtin_cpu_supports("fma")) {
        return;
    }
    const int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    char message[400];
    snprintf(message, sizeof message,
             "cpu: OpenBLAS chose its %s kernels, which use no AVX, on a processor with %s "
             "that it does not know: matrix products run several times slower (4.5x on an "
             "Emerald Rapids Xeon). Set OPENBLAS_CORETYPE=%s in the environment before the "
             "process starts (docs/performance.md, \"OpenBLAS on a newer processor\")",
             core, avx512 ? "AVX-512" : "AVX2", avx512 ? "SkylakeX" : "Haswell");
    host->log(host->ctx, TF_LOG_WARN, message);
#else
    (void)host;
#endif
}

/* ---- the options of create() ------------------------------------------------------ */

/*
 * The extra options:
 * - stream_threshold=<bytes>: an elementwise job whose operands together exceed
 *   it streams its output (see run_flat in cpu_elementwise_run.c), and so does a
 *   FUSED call with a reduced output (tf__cpu_exec_fused). The default is
 *   the last-level cache; 0 streams every cheap dense job, which is how the
 *   tests reach that path with small tensors.
 * - fused=on|one|off: whether supports() says yes to TF_PRIM_FUSED (default on);
 *   one: only to programs with one output (as an engine of ABI 1.2). Off, the
 *   host runs such programs a step at a time, and with one it runs programs
 *   with several held results so: ways to test the host's paths (the tests of
 *   the core's fused reverse rules and deferred chains do).
 * - jit=auto|always|off: the hot-program compiler (cpu_jit.c; default auto,
 *   which compiles a large FUSED program once it has run a few times, and
 *   interprets it if it cannot); always compiles every program it covers at
 *   once and fails a call whose compile fails (the tests' way to it).
 * - jit_cc=<command>: the C compiler it runs (default cc, found on PATH).
 * - jit_cache=auto|off|<absolute folder>: where compiled programs are kept
 *   between processes (cpu_jit_store.c; auto: the user's cache folder).
 * - spin_us=<microseconds>: how long a pool thread waiting for work spins before
 *   it sleeps (cpu_pool.c; default CPU_SPIN_US_DEFAULT, at most 1 s; 0 sleeps at once).
 */
/*
 * *field = the index of value among the three words of option `key` (one of
 * CPU_FUSED_* or CPU_JIT_*), or a TF_ERR_VALIDATION naming what was expected.
 */
static int parse_word(const char *key, const char *value, const char *const words[3],
                      const char *expected, int *field, cpu_err *err)
{
    for (int i = 0; i < 3 && value != NULL; i++) {
        if (strcmp(value, words[i]) == 0) {
            *field = i;
            return 0;
        }
    }
    return tf__cpu_fail(err, TF_ERR_VALIDATION, "cpu: create: option %s = \"%s\" (expected %s)",
                        key, value != NULL ? value : "(null)", expected);
}

static int parse_extra(const char *key, const char *value, cpu_options *opts, cpu_err *err)
{
    static const char *const levels[3] = {"off", "one", "on"};     /* CPU_FUSED_* */
    static const char *const modes[3] = {"off", "auto", "always"}; /* CPU_JIT_* */
    if (key != NULL && strcmp(key, "fused") == 0) {
        return parse_word(key, value, levels, "on, one or off", &opts->fused, err);
    }
    if (key != NULL && strcmp(key, "jit") == 0) {
        return parse_word(key, value, modes, "auto, always or off", &opts->jit, err);
    }
    if (key != NULL && strcmp(key, "jit_cc") == 0) {
        if (value == NULL || value[0] == '\0' || strlen(value) >= sizeof opts->jit_cc) {
            return tf__cpu_fail(
                err, TF_ERR_VALIDATION,
                "cpu: create: option jit_cc = \"%s\" (expected a command of 1 to %zu "
                "bytes)",
                value != NULL ? value : "(null)", sizeof opts->jit_cc - 1);
        }
        snprintf(opts->jit_cc, sizeof opts->jit_cc, "%s", value);
        return 0;
    }
    if (key != NULL && strcmp(key, "jit_cache") == 0) {
        if (value == NULL || value[0] == '\0' || strlen(value) >= sizeof opts->jit_cache) {
            return tf__cpu_fail(err, TF_ERR_VALIDATION,
                                "cpu: create: option jit_cache = \"%s\" (expected auto, off or an "
                                "absolute path)",
                                value != NULL ? value : "(null)");
        }
        snprintf(opts->jit_cache, sizeof opts->jit_cache, "%s", value);
        return 0;
    }
    int spin = key != NULL && strcmp(key, "spin_us") == 0;
    if (!spin && (key == NULL || strcmp(key, "stream_threshold") != 0)) {
        return tf__cpu_fail(
            err, TF_ERR_VALIDATION,
            "cpu: create: unknown option \"%s\" (the CPU engine's extra options are "
            "stream_threshold, fused, jit, jit_cc, jit_cache and spin_us)",
            key != NULL ? key : "(null)");
    }
    char *end = NULL;
    errno = 0;
    unsigned long long v =
        value != NULL && value[0] >= '0' && value[0] <= '9' ? strtoull(value, &end, 10) : 0;
    unsigned long long most = spin ? CPU_SPIN_US_MAX : SIZE_MAX;
    if (end == NULL || *end != '\0' || errno != 0 || v > most) {
        return tf__cpu_fail(
            err, TF_ERR_VALIDATION,
            spin ? "cpu: create: option spin_us = \"%s\" is not a count of "
                   "microseconds from 0 to 1000000"
                 : "cpu: create: option stream_threshold = \"%s\" is not a byte count",
            value != NULL ? value : "(null)");
    }
    if (spin) {
        opts->spin_us = (int64_t)v;
    } else {
        opts->stream_bytes = (size_t)v;
    }
    return 0;
}

int tf__cpu_parse_options(const char *device_name, const tf_engine_options *o, cpu_options *opts,
                          cpu_err *err)
{
    int *threads = &opts->threads;
    *threads = 0;
    opts->stream_bytes = last_level_cache_bytes();
    opts->fused = CPU_FUSED_ON;
    opts->jit = CPU_JIT_AUTO;
    snprintf(opts->jit_cc, sizeof opts->jit_cc, "cc");
    opts->jit_cache[0] = '\0';
    opts->spin_us = CPU_SPIN_US_DEFAULT;
    if (o == NULL) {
        *threads = (int)online_cpus();
        return 0;
    }
    if (TF_ABI_HAS_FIELD(o, tf_engine_options, device_index) && o->device_index != 0) {
        return tf__cpu_fail(
            err, TF_ERR_VALIDATION,
            "cpu: create: option device_index = %u out of range (the CPU engine has 1 "
            "device)",
            o->device_index);
    }
    if (TF_ABI_HAS_FIELD(o, tf_engine_options, threads)) {
        if (o->threads < 0) {
            return tf__cpu_fail(
                err, TF_ERR_VALIDATION,
                "cpu: create: option threads = %d is negative (0 means the default)", o->threads);
        }
        *threads = o->threads;
    }
    if (TF_ABI_HAS_FIELD(o, tf_engine_options, device_name) && o->device_name != NULL &&
        strstr(device_name, o->device_name) == NULL) {
        return tf__cpu_fail(err, TF_ERR_VALIDATION,
                            "cpu: create: option device_name = \"%s\" matches no device (the CPU "
                            "engine's device is \"%s\")",
                            o->device_name, device_name);
    }
    if (TF_ABI_HAS_FIELD(o, tf_engine_options, extra_values)) {
        for (uint32_t k = 0; k < o->n_extra; k++) {
            if (parse_extra(o->extra_keys != NULL ? o->extra_keys[k] : NULL,
                            o->extra_values != NULL ? o->extra_values[k] : NULL, opts, err) != 0) {
                return 1;
            }
        }
    }
    if (*threads == 0) {
        *threads = (int)online_cpus();
    }
    if (*threads > CPU_MAX_THREADS) {
        *threads = CPU_MAX_THREADS; /* "up to N threads" */
    }
    return 0;
}
