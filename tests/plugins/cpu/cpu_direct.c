/*
 * cpu_direct.c - the CPU plugin loaded below the library (cpu_direct.h).
 */
#include "cpu_direct.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cpu_direct g_direct;

static void *host_alloc(void *ctx, size_t size, size_t align)
{
    (void)ctx;
    align = align < 16 ? 16 : align;
    return aligned_alloc(align, (size + align) / align * align); /* a multiple, never 0 */
}

static void host_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static void host_report(void *ctx, tf_status status, const char *message)
{
    cpu_direct *d = ctx;
    d->reported = status;
    snprintf(d->message, sizeof d->message, "%s", message);
}

static void host_log(void *ctx, tf_log_level level, const char *message)
{
    (void)ctx;
    (void)level;
    (void)message;
}

static const tf_host_api g_host = {
    sizeof(tf_host_api), TF_ENGINE_ABI_MAJOR, TF_ENGINE_ABI_MINOR, 0,       &g_direct,
    host_alloc,          host_free,           host_report,         host_log};

void cpu_direct_open(void)
{
    cpu_direct *d = &g_direct;
    memset(d, 0, sizeof *d);
    d->lib = dlopen(TF_CPU_PLUGIN_FILE, RTLD_NOW | RTLD_LOCAL);
    if (!d->lib)
        fail_msg("dlopen %s: %s", TF_CPU_PLUGIN_FILE, dlerror());
    const tf_engine_plugin *(*entry)(const tf_host_api *);
    *(void **)&entry = dlsym(d->lib, TF_ENGINE_ENTRY_SYMBOL);
    assert_non_null(entry);
    d->plugin = entry(&g_host);
    assert_non_null(d->plugin);
    assert_true(d->plugin->capabilities & TF_ENGINE_CAP_IN_PLACE);
    assert_int_equal(d->plugin->init(&g_host, &d->plugin_ctx), TF_OK);
}

/* The engines made, so that close destroys them all. */
#define DIRECT_MAX_ENGINES 8
static tf_engine_state *g_made[DIRECT_MAX_ENGINES];
static int g_n_made;

tf_engine_state *cpu_direct_engine(int threads, uint32_t n, const char *const *keys,
                                   const char *const *values)
{
    assert_true(g_n_made < DIRECT_MAX_ENGINES);
    tf_engine_options opt = {sizeof opt, 0, threads, 0, NULL, NULL, NULL};
    opt.n_extra = n;
    opt.extra_keys = n > 0 ? keys : NULL;
    opt.extra_values = n > 0 ? values : NULL;
    tf_engine_state *e = NULL;
    tf_status st = g_direct.plugin->create(g_direct.plugin_ctx, &opt, &e);
    if (st != TF_OK)
        fail_msg("cpu create (threads %d): %s (%s)", threads, tf_status_name(st), g_direct.message);
    g_made[g_n_made++] = e;
    return e;
}

void cpu_direct_close(void)
{
    cpu_direct *d = &g_direct;
    for (int i = 0; i < g_n_made; i++)
        d->plugin->destroy(g_made[i]);
    g_n_made = 0;
    if (d->plugin->shutdown)
        d->plugin->shutdown(d->plugin_ctx);
    dlclose(d->lib);
    memset(d, 0, sizeof *d);
}

tf_operand cpu_direct_operand(tf_dtype dtype, uint32_t rank, const int64_t *shape,
                              const int64_t *strides, int64_t offset, void *data)
{
    return (tf_operand){sizeof(tf_operand), dtype, rank, 0, shape, strides, offset, NULL, data};
}

void cpu_direct_fill(tfr_rng *rng, tf_dtype dtype, size_t n, int special_percent, void *data)
{
    static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < n; i++) {
        const double v = special_percent > 0 && tfr_rng_chance(rng, special_percent)
                             ? special[tfr_rng_int(rng, 0, 4)]
                             : tfr_rng_real(rng, -2.0, 2.0);
        tfr_store(dtype, data, (int64_t)i, tfr_f(v));
    }
}

tf_status cpu_direct_fused(tf_engine_state *e, const tf_fused_params *params, uint32_t n_in,
                           const tf_operand *in, uint32_t n_out, const tf_operand *out,
                           uint32_t flags)
{
    const tf_operand *ins[TF_FUSED_MAX_INPUTS + 1], *outs[TF_FUSED_MAX_OUTPUTS + 1];
    for (uint32_t k = 0; k < n_in && k <= TF_FUSED_MAX_INPUTS; k++)
        ins[k] = &in[k];
    for (uint32_t k = 0; k < n_out && k <= TF_FUSED_MAX_OUTPUTS; k++)
        outs[k] = &out[k];
    tf_exec x = {sizeof x, TF_PRIM_FUSED, params, n_in, n_out, ins, outs, flags, 0};
    g_direct.reported = TF_OK;
    return g_direct.plugin->execute(e, &x);
}
