/*
 * fuzz_descriptor.c - the checks the loaders run on plugin descriptors.
 *
 * Loading a file per input would cost a dlopen each; instead the harness
 * builds the descriptor a plugin's entry symbol would return and hands it to
 * the very functions the loaders call on it:
 *   - an engine descriptor to tf__plugin_check_descriptor (loader/plugin.c);
 *   - an extension module descriptor to tf__extension_check
 *     (extension_load.c), and, when that accepts it, installs the module into
 *     a fresh runtime, its install hook declaring a fuzz-built op table
 *     through the registrar (registry.c, the op checks of extension_load.c).
 * Each descriptor lives in a heap block exactly as long as its struct_size
 * says (when that is below the full size), so a check that reads a field the
 * plugin did not provide is an ASan report. The expected verdict follows from
 * the ABI's documented rules (engine_abi.h, extension_abi.h), computed here
 * independently; any other verdict aborts.
 *
 * An input whose first byte is 0xF0 or above fuzzes what the host makes of
 * a plugin's device_info answer instead (issue 19, item 2): the plugin
 * fills the struct with the input's bytes, strings without a terminating
 * NUL included, and returns a status of the input's choosing, for a caller
 * whose struct_size is any size; tf_plugin_device_info must hand back only
 * terminated strings, and write nothing unless it succeeds.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tenferro/engine_abi.h>
#include <tenferro/extension_abi.h>
#include <tenferro/runtime.h>

#include "extensions_internal.h"
#include "fuzz_common.h"
#include "loader_internal.h"

/* ---- stand-ins for the plugin's functions (never called by the checks) ---- */

static tf_status f_init(const tf_host_api *h, void **ctx)
{
    return TF_ERR_RUNTIME_STATE;
}
static void f_void(void *p)
{
}
static uint32_t f_count(void *ctx)
{
    return 0;
}
static tf_status f_info(void *c, uint32_t i, tf_device_info *o)
{
    return TF_ERR_RUNTIME_STATE;
}
static tf_status f_create(void *c, const tf_engine_options *o, tf_engine_state **out)
{
    return TF_ERR_RUNTIME_STATE;
}
static void f_destroy(tf_engine_state *e)
{
}
static int f_supports(tf_engine_state *e, uint32_t p, uint32_t o, const uint32_t *d, uint32_t n)
{
    return 0;
}
static tf_status f_alloc(tf_engine_state *e, size_t n, tf_engine_buffer **o, void **h)
{
    return TF_ERR_OUT_OF_MEMORY;
}
static void f_free(tf_engine_state *e, tf_engine_buffer *b)
{
}
static tf_status f_up(tf_engine_state *e, tf_engine_buffer *b, size_t o, const void *s, size_t n)
{
    return TF_ERR_RUNTIME_STATE;
}
static tf_status f_down(tf_engine_state *e, const tf_engine_buffer *b, size_t o, void *d, size_t n)
{
    return TF_ERR_RUNTIME_STATE;
}
static tf_status f_copy(tf_engine_state *e, const tf_engine_buffer *s, size_t soff,
                        tf_engine_buffer *d, size_t doff, size_t n)
{
    return TF_ERR_RUNTIME_STATE;
}
static tf_status f_exec(tf_engine_state *e, const tf_exec *x)
{
    return TF_ERR_RUNTIME_STATE;
}
static tf_status f_sync(tf_engine_state *e)
{
    return TF_OK;
}

static tf_status f_infer(const tf_ext_rule_ctx *ctx, const tf_ext_meta *t, uint32_t nt,
                         const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    return TF_ERR_RUNTIME_STATE;
}
static void f_kernel(void)
{
}

/* ---- strings the fuzzer mixes with its own ---- */

static const char *const k_names[] = {
    "cpu",
    "a",
    "solve",
    "x_1",
    "Solve",
    "1x",
    "_x",
    "a.b",
    "",
    "a-b",
    "tenferro.linalg",
    "tenferro.fixture",
    "a.b.c",
    "a..b",
    ".a",
    "a.",
    "tenferro.x9_",
    /* 127 and 128 bytes: the longest id accepted and one more */
    "a.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "a.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
};
#define N_NAMES (sizeof k_names / sizeof k_names[0])

/* A string: NULL, one of k_names, or bytes of the input (copied into buf). */
static const char *pick_string(fz_reader *r, char *buf, size_t cap)
{
    uint8_t how = fz_u8(r);
    if (how < 16)
        return NULL;
    if (how < 160)
        return k_names[how % N_NAMES];
    fz_string(r, buf, cap);
    return buf;
}

/* struct_size: the full size, the smallest accepted, or something near them. */
static uint32_t pick_size(fz_reader *r, size_t full, size_t min)
{
    switch (fz_u8(r) % 8) {
    case 0: return (uint32_t)min;
    case 1: return (uint32_t)min - 1;
    case 2: return (uint32_t)(min - 8);
    case 3: return fz_u8(r);
    case 4: return fz_u32(r);
    case 5: return (uint32_t)full + 64;
    default: return (uint32_t)full;
    }
}

/* abi_minor: 0, the host's own, a newer one, or anything. */
static uint32_t pick_minor(fz_reader *r, uint32_t host)
{
    uint32_t v = fz_u32(r);
    switch (v >> 30) {
    case 0: return 0;
    case 1: return host;
    case 2: return host + 1 + (v & 7);
    default: return v;
    }
}

/*
 * A heap copy of the first struct_size bytes of the full struct (at least
 * the struct_size field, at most the full struct): what a plugin built
 * against an older header provides.
 */
static void *truncated_copy(const void *full, size_t full_size)
{
    uint32_t declared;
    memcpy(&declared, full, sizeof declared);
    size_t n = declared < sizeof declared ? sizeof declared : declared;
    if (n > full_size)
        n = full_size;
    void *p = malloc(n);
    FZ_CHECK(p != NULL, "malloc");
    memcpy(p, full, n);
    return p;
}

/* ---- the engine descriptor ---- */

static void fuzz_engine(fz_reader *r)
{
    char name[64];
    tf_engine_plugin d;
    memset(&d, 0, sizeof d);
    d.struct_size = pick_size(r, sizeof d, TF_ENGINE_PLUGIN_MIN_SIZE);
    d.abi_major = fz_u8(r) < 224 ? TF_ENGINE_ABI_MAJOR : fz_u32(r);
    d.abi_minor = pick_minor(r, TF_ENGINE_ABI_MINOR);
    d.name = pick_string(r, name, sizeof name);
    d.version = fz_u8(r) < 16 ? NULL : "1.0";
    d.description = fz_u8(r) & 1 ? "described" : NULL;
    uint32_t absent = fz_u8(r) < 128 ? 0 : fz_u32(r); /* bit i: function i missing */
    d.init = absent & 1 << 0 ? NULL : f_init;
    d.shutdown = absent & 1 << 1 ? NULL : f_void; /* optional */
    d.device_count = absent & 1 << 2 ? NULL : f_count;
    d.device_info = absent & 1 << 3 ? NULL : f_info;
    d.create = absent & 1 << 4 ? NULL : f_create;
    d.destroy = absent & 1 << 5 ? NULL : f_destroy;
    d.supports = absent & 1 << 6 ? NULL : f_supports;
    d.buffer_alloc = absent & 1 << 7 ? NULL : f_alloc;
    d.buffer_free = absent & 1 << 8 ? NULL : f_free;
    d.upload = absent & 1 << 9 ? NULL : f_up;
    d.download = absent & 1 << 10 ? NULL : f_down;
    d.buffer_copy = absent & 1 << 11 ? NULL : f_copy;
    d.execute = absent & 1 << 12 ? NULL : f_exec;
    d.synchronize = absent & 1 << 13 ? NULL : f_sync;

    tf_status want;
    if (d.struct_size >= offsetof(tf_engine_plugin, abi_minor) &&
        d.abi_major != TF_ENGINE_ABI_MAJOR)
        want = TF_ERR_PLUGIN_ABI;
    else if (d.struct_size < TF_ENGINE_PLUGIN_MIN_SIZE)
        want = TF_ERR_PLUGIN_STRUCT_SIZE;
    else if (d.abi_minor <= TF_ENGINE_ABI_MINOR && d.struct_size > sizeof d)
        want = TF_ERR_PLUGIN_STRUCT_SIZE; /* larger than the minor it states: a lie */
    else if (!d.name || !d.name[0] || !d.version || (absent & 0x3ffd))
        want = TF_ERR_PLUGIN_MISSING_FUNCTION;
    else
        want = TF_OK;

    tf_engine_plugin *copy = truncated_copy(&d, sizeof d);
    tf_status st = tf__plugin_check_descriptor("fuzz-engine.so", copy);
    free(copy);
    FZ_CHECK(st == want, "engine descriptor: got %s, expected %s", tf_status_name(st),
             tf_status_name(want));
    FZ_CHECK(st == TF_OK || strstr(tf_error_message(), "fuzz-engine.so"),
             "refusal does not name the file: %s", tf_error_message());
}

/* ---- the extension module descriptor and its op table ---- */

/* One segment of [a-z0-9_] starting with a letter. */
static size_t segment_len(const char *s)
{
    if (*s < 'a' || *s > 'z')
        return 0;
    size_t n = 0;
    while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_')
        n++;
    return n;
}

/* The ABI's naming rule: an op name is one segment, a module id two or more. */
static int name_ok(const char *s, int namespaced)
{
    if (!s || strlen(s) > TF_EXT_MAX_NAME)
        return 0;
    int segments = 0;
    for (;;) {
        size_t n = segment_len(s);
        if (n == 0)
            return 0;
        segments++;
        s += n;
        if (*s == '\0')
            break;
        if (*s != '.')
            return 0;
        s++;
    }
    return namespaced ? segments >= 2 : segments == 1;
}

#define MAX_OPS 6
typedef struct op_spec {
    tf_ext_op op;
    uint32_t kinds[TF_EXT_MAX_ARGS + 2];
    const char *arg_names[TF_EXT_MAX_ARGS + 2];
    tf_ext_kernel kernels[3];
    char name[48];
    int null_op; /* the hook passes NULL instead */
    tf_ext_op *copy;
} op_spec;

static struct {
    op_spec ops[MAX_OPS];
    uint32_t n_ops;
    tf_status hook_result;
    tf_status first_add_error;
} g_table;

static tf_status fuzz_install(const tf_host_api *host, const tf_ext_registrar *reg)
{
    g_table.first_add_error = TF_OK;
    for (uint32_t i = 0; i < g_table.n_ops; i++) {
        const op_spec *o = &g_table.ops[i];
        tf_status st = reg->add_op(reg->candidate, o->null_op ? NULL : o->copy);
        if (st && !g_table.first_add_error)
            g_table.first_add_error = st;
    }
    return g_table.hook_result; /* may claim success after a failed add_op */
}

static void make_op(fz_reader *r, op_spec *o)
{
    memset(o, 0, sizeof *o);
    tf_ext_op *op = &o->op;
    op->struct_size = pick_size(r, sizeof *op, offsetof(tf_ext_op, jvp) + sizeof op->jvp);
    op->name = pick_string(r, o->name, sizeof o->name);
    op->n_args = fz_u8(r) < 240 ? fz_below(r, TF_EXT_MAX_ARGS + 1) : fz_u32(r);
    op->n_outputs = fz_u8(r) < 240 ? fz_below(r, TF_EXT_MAX_OUTPUTS + 2) : fz_u32(r);
    uint8_t flags = fz_u8(r);
    for (uint32_t i = 0; i < TF_EXT_MAX_ARGS + 2; i++) {
        o->kinds[i] = fz_below(r, 4); /* 3 is not a kind */
        o->arg_names[i] = fz_u8(r) < 8 ? NULL : "arg";
    }
    op->arg_kinds = flags & 1 ? NULL : o->kinds;
    op->arg_names = flags & 2 ? NULL : o->arg_names;
    op->infer = flags & 4 ? NULL : f_infer;
    op->n_kernels = fz_below(r, 4);
    static const char *const engines[] = {"cpu", "vulkan", NULL, "cpu "};
    for (uint32_t i = 0; i < 3; i++) {
        o->kernels[i].engine = engines[fz_below(r, 4)];
        o->kernels[i].fn = fz_u8(r) < 8 ? NULL : f_kernel;
    }
    op->kernels = flags & 8 ? NULL : o->kernels;
    if (op->n_kernels > 3 || !op->kernels)
        op->n_kernels = op->kernels ? 3 : 0;
    op->doc = flags & 16 ? "documented" : NULL;
    o->null_op = (flags & 0xe0) == 0xe0;
}

/* Whether o is a well-formed op of a module with id `id`, per extension_abi.h. */
static int op_ok(const op_spec *o, const char *id)
{
    const tf_ext_op *op = &o->op;
    if (o->null_op || op->struct_size < offsetof(tf_ext_op, jvp) + sizeof op->jvp)
        return 0;
    if (!name_ok(op->name, 0) || strlen(id) + 1 + strlen(op->name) > TF_EXT_MAX_NAME)
        return 0;
    if (op->n_args > TF_EXT_MAX_ARGS || (op->n_args && (!op->arg_kinds || !op->arg_names)))
        return 0;
    if (op->n_outputs < 1 || op->n_outputs > TF_EXT_MAX_OUTPUTS || !op->infer)
        return 0;
    for (uint32_t i = 0; i < op->n_args; i++)
        if (op->arg_kinds[i] > TF_EXT_ARG_I64 || !op->arg_names[i])
            return 0;
    int cpu = 0;
    for (uint32_t i = 0; i < op->n_kernels; i++) {
        if (!op->kernels[i].engine || !op->kernels[i].fn)
            return 0;
        cpu |= strcmp(op->kernels[i].engine, "cpu") == 0;
    }
    return cpu;
}

static void install_ops(fz_reader *r, const tf_extension_module_desc *d)
{
    g_table.n_ops = fz_below(r, MAX_OPS + 1);
    g_table.hook_result = fz_u8(r) < 240 ? TF_OK : TF_ERR_RUNTIME_STATE;
    int want_ok = g_table.hook_result == TF_OK;
    for (uint32_t i = 0; i < g_table.n_ops; i++) {
        op_spec *o = &g_table.ops[i];
        if (fz_u8(r) < 16 && i > 0) { /* the same op twice */
            *o = g_table.ops[i - 1];
        } else {
            make_op(r, o);
            o->copy = truncated_copy(&o->op, sizeof o->op);
        }
        want_ok &= op_ok(o, d->id);
        for (uint32_t j = 0; want_ok && j < i; j++)
            want_ok &= strcmp(g_table.ops[j].op.name, o->op.name) != 0;
    }

    /* A module as the loader makes it (extension_internal.h); freed below,
       after the runtime that installed it, which nothing else can reach. */
    tf_extension_module *m = calloc(1, sizeof *m);
    FZ_CHECK(m != NULL, "calloc");
    m->file = "";
    m->desc = d;
    FZ_CHECK(pthread_mutex_init(&m->recs_lock, NULL) == 0, "mutex");
    tf_runtime *rt;
    FZ_CHECK(tf_runtime_create(&rt) == TF_OK, "runtime_create: %s", tf_error_message());
    tf_epoch before = tf_runtime_epoch(rt), epoch = 12345;
    tf_status st = tf_runtime_install_extension_module(rt, m, &epoch);
    if (want_ok) {
        FZ_CHECK(st == TF_OK, "install refused a valid table: %s", tf_error_message());
        FZ_CHECK(epoch == tf_runtime_epoch(rt) && epoch > before, "epoch");
    } else {
        FZ_CHECK(st == TF_ERR_RUNTIME_STATE, "install of a bad table: %s, expected %s (%s)",
                 tf_status_name(st), tf_status_name(TF_ERR_RUNTIME_STATE), tf_error_message());
        FZ_CHECK(epoch == 12345 && tf_runtime_epoch(rt) == before, "failed install changed state");
    }
    for (uint32_t i = 0; i < g_table.n_ops; i++) {
        const op_spec *o = &g_table.ops[i];
        if (!o->op.name || o->null_op)
            continue;
        char full[2 * TF_EXT_MAX_NAME + 2];
        snprintf(full, sizeof full, "%s.%s", d->id, o->op.name);
        int has = tf_runtime_has_op(rt, full);
        FZ_CHECK(has == (want_ok ? 1 : 0), "has_op(%s) = %d after %s", full, has,
                 tf_status_name(st));
    }
    tf_runtime_release(rt);
    for (tf_ext_oprec *rec = m->recs, *next; rec; rec = next) {
        next = rec->next;
        tf__free(rec);
    }
    pthread_mutex_destroy(&m->recs_lock);
    free(m);
    for (uint32_t i = 0; i < g_table.n_ops; i++) {
        /* a repeated op shares its predecessor's copy */
        if (i == 0 || g_table.ops[i].copy != g_table.ops[i - 1].copy)
            free(g_table.ops[i].copy);
    }
}

static void fuzz_extension(fz_reader *r)
{
    char id[TF_EXT_MAX_NAME + 8];
    tf_extension_module_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = pick_size(r, sizeof d, TF_EXTENSION_MODULE_MIN_SIZE);
    d.abi_major = fz_u8(r) < 224 ? TF_EXTENSION_ABI_MAJOR : fz_u32(r);
    d.abi_minor = pick_minor(r, TF_EXTENSION_ABI_MINOR);
    d.id = pick_string(r, id, sizeof id);
    uint8_t flags = fz_u8(r);
    d.version = flags & 1 ? NULL : "0.1";
    d.install = flags & 2 ? NULL : fuzz_install;
    d.description = flags & 4 ? "described" : NULL;

    tf_status want;
    if (d.struct_size >= offsetof(tf_extension_module_desc, abi_minor) &&
        d.abi_major != TF_EXTENSION_ABI_MAJOR)
        want = TF_ERR_PLUGIN_ABI;
    else if (d.struct_size < TF_EXTENSION_MODULE_MIN_SIZE)
        want = TF_ERR_PLUGIN_STRUCT_SIZE;
    else if (d.abi_minor <= TF_EXTENSION_ABI_MINOR &&
             d.struct_size > (d.abi_minor == 0 ? TF_EXTENSION_MODULE_MIN_SIZE : sizeof d))
        want = TF_ERR_PLUGIN_STRUCT_SIZE; /* larger than the minor it states: a lie */
    else if (!d.install || !d.version)
        want = TF_ERR_PLUGIN_MISSING_FUNCTION;
    else if (!name_ok(d.id, 1))
        want = TF_ERR_VALIDATION;
    else
        want = TF_OK;

    tf_extension_module_desc *copy = truncated_copy(&d, sizeof d);
    tf_status st = tf__extension_check("fuzz", "fuzz-ext.so", copy);
    FZ_CHECK(st == want, "extension descriptor: got %s, expected %s (%s)", tf_status_name(st),
             tf_status_name(want), tf_error_message());
    if (st == TF_OK)
        install_ops(r, copy);
    free(copy);
}

/* ---- device_info: what the host accepts of a plugin's answer ---- */

static struct {
    uint32_t count;
    tf_status status;
    unsigned char bytes[sizeof(tf_device_info)];
} g_dev;

static uint32_t d_count(void *ctx)
{
    return g_dev.count;
}

/* Writes the input's bytes over every field the caller's struct_size covers. */
static tf_status d_info(void *c, uint32_t i, tf_device_info *o)
{
    size_t n = o->struct_size < sizeof *o ? o->struct_size : sizeof *o;
    if (n > sizeof o->struct_size)
        memcpy((unsigned char *)o + sizeof o->struct_size, g_dev.bytes + sizeof o->struct_size,
               n - sizeof o->struct_size);
    return g_dev.status;
}

/* Whether the field [off, off + len) of a struct of `size` bytes lacks a NUL. */
static int unterminated(const unsigned char *b, size_t size, size_t off, size_t len)
{
    return size >= off + len && !memchr(b + off, '\0', len);
}

static void fuzz_device_info(fz_reader *r)
{
    static const tf_status statuses[] = {TF_OK, TF_OK, TF_OK, TF_ERR_BACKEND, TF_ERR_DEVICE_LOST,
                                         (tf_status)9999};
    g_dev.count = fz_u8(r) < 240 ? fz_below(r, 4) : fz_u32(r);
    g_dev.status = statuses[fz_below(r, 6)];
    for (size_t i = 0; i < sizeof g_dev.bytes; i++)
        g_dev.bytes[i] = fz_u8(r) < 200 ? (unsigned char)('a' + fz_below(r, 26)) : fz_u8(r);
    tf_engine_plugin desc = {.struct_size = sizeof desc, .name = "fuzz", .version = "0",
                             .device_count = d_count, .device_info = d_info};
    struct tf_plugin p = {.desc = &desc};
    static const uint32_t sizes[] = {0, offsetof(tf_device_info, flags),
                                     offsetof(tf_device_info, name),
                                     offsetof(tf_device_info, name) + 100,
                                     offsetof(tf_device_info, driver),
                                     sizeof(tf_device_info) - 1, sizeof(tf_device_info),
                                     sizeof(tf_device_info) + 64};
    uint32_t index = fz_u8(r) < 224 ? fz_below(r, 4) : fz_u32(r);
    union {
        tf_device_info info;
        unsigned char raw[sizeof(tf_device_info) + 64];
    } got, before;
    memset(&got, 0x5a, sizeof got);
    got.info.struct_size = sizes[fz_below(r, 8)];
    before = got;
    tf_status st = tf_plugin_device_info(&p, index, &got.info);
    size_t n = got.info.struct_size < sizeof got.info ? got.info.struct_size : sizeof got.info;
    tf_status want = got.info.struct_size < offsetof(tf_device_info, flags) ? TF_ERR_VALIDATION
                     : index >= g_dev.count                                 ? TF_ERR_OUT_OF_RANGE
                                                                            : g_dev.status;
    if (want == TF_OK &&
        (unterminated(g_dev.bytes, n, offsetof(tf_device_info, name), sizeof got.info.name) ||
         unterminated(g_dev.bytes, n, offsetof(tf_device_info, driver), sizeof got.info.driver)))
        want = TF_ERR_BACKEND;
    if (want != TF_OK) {
        FZ_CHECK(st != TF_OK, "device_info: accepted an answer it must refuse");
        FZ_CHECK(want == (tf_status)9999 || st == want, "device_info: %s, expected %s (%s)",
                 tf_status_name(st), tf_status_name(want), tf_error_message());
        FZ_CHECK(memcmp(&got, &before, sizeof got) == 0, "device_info wrote on failure");
        return;
    }
    FZ_CHECK(st == TF_OK, "device_info refused a good answer: %s", tf_error_message());
    FZ_CHECK(got.info.struct_size == before.info.struct_size, "struct_size changed");
    FZ_CHECK(memcmp(got.raw + 4, g_dev.bytes + 4, n - 4) == 0, "fields not as the plugin wrote");
    FZ_CHECK(memcmp(got.raw + n, before.raw + n, sizeof got - n) == 0, "wrote past struct_size");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_reader r = {data, size};
    uint8_t mode = fz_u8(&r);
    if (mode >= 0xF0)
        fuzz_device_info(&r);
    else if (mode & 1)
        fuzz_engine(&r);
    else
        fuzz_extension(&r);
    return 0;
}
