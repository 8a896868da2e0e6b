/*
 * cpu_direct.h - the CPU plugin loaded straight from TF_CPU_PLUGIN_FILE (a compile
 * definition of the test), below the library: for the calls tf_engine_execute never
 * makes, FUSED with out[0] one of the inputs (TF_ENGINE_CAP_IN_PLACE) and calls without
 * TF_EXEC_VALIDATED, which the engine must check itself. One plugin per process; any
 * number of engines of it.
 */
#ifndef CPU_DIRECT_H
#define CPU_DIRECT_H

#include "tf_ref.h"

#include <tenferro/engine_abi.h>

typedef struct cpu_direct {
    void *lib;
    const tf_engine_plugin *plugin;
    void *plugin_ctx;
    tf_engine_state *engine; /* the test's own engine, when it keeps one here */
    tf_status reported;      /* the last report_error, TF_OK when none */
    char message[256];
} cpu_direct;

extern cpu_direct g_direct;

/* Loads and initialises the plugin (it must offer in-place calls); fails the test if not. */
void cpu_direct_open(void);
/* An engine of `threads` with n extra options keys[i] = values[i]; fails the test if refused. */
tf_engine_state *cpu_direct_engine(int threads, uint32_t n, const char *const *keys,
                                   const char *const *values);
/* Destroys every engine first (g_direct.engine too), then unloads the plugin. */
void cpu_direct_close(void);

/* A host-memory operand: shape and strides borrowed from the caller. */
tf_operand cpu_direct_operand(tf_dtype dtype, uint32_t rank, const int64_t *shape,
                              const int64_t *strides, int64_t offset, void *data);

/*
 * n values of a float dtype into data, uniform in [-2, 2); with special_percent > 0,
 * that share of them a zero, an infinity or a NaN instead (0 draws no chance at all).
 */
void cpu_direct_fill(tfr_rng *rng, tf_dtype dtype, size_t n, int special_percent, void *data);

/* execute() of a FUSED call on engine e (g_direct.reported reset first). */
tf_status cpu_direct_fused(tf_engine_state *e, const tf_fused_params *params, uint32_t n_in,
                           const tf_operand *in, uint32_t n_out, const tf_operand *out,
                           uint32_t flags);

#endif /* CPU_DIRECT_H */
