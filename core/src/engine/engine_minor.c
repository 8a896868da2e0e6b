/*
 * engine_minor.c - what an engine's ABI minor lets the host ask and send it.
 *
 * Every minor after 1.0 added something an engine built against an older one
 * does not know: a question it would misread, a params field it would never
 * read. The host answers such questions no without asking (engine.c's
 * tf_engine_supports and its supports() memo), refuses such calls, and hands
 * older engines the params struct as their minor defines it.
 */
#include <stddef.h>

#include "engine_internal.h"

/*
 * ABI 1.3: FUSED with several outputs (op m - 1 > 0) is never put to an engine
 * built against an older minor, which reads neither params.n_outputs nor
 * supports()'s op for FUSED: the answer is no without asking.
 */
static bool fused_outputs_unknown(const tf_engine *e, tf_prim prim, uint32_t op)
{
    return prim == TF_PRIM_FUSED && op > 0 && op < TF_FUSED_MAX_OUTPUTS && e->desc->abi_minor < 3;
}

/* The first minor of the engine ABI whose engines may be asked about complex dtypes. */
#define COMPLEX_ABI_MINOR 4u

/*
 * ABI 1.4: the complex dtypes are never put to an engine built against an
 * older minor, whose header did not have them (it might take dtype 5 for a
 * value it does not know and claim it for a primitive of "all dtypes"): the
 * answer is no without asking.
 */
static bool complex_unknown(const tf_engine *e, const uint32_t *dt, size_t n)
{
    if (e->desc->abi_minor >= COMPLEX_ABI_MINOR)
        return false;
    for (size_t i = 0; i < n; i++)
        if (tf_dtype_is_complex((tf_dtype)dt[i]))
            return true;
    return false;
}

/* The first minor of the engine ABI whose engines take FUSED immediates. */
#define IMMEDIATES_ABI_MINOR 5u

/* The first minor of the engine ABI whose engines take a FUSED reduced output. */
#define REDUCE_ABI_MINOR 6u

/* ABI 1.6: whether op is a FUSED question about a reduced output, which an engine
   built against an older minor never sees. */
static bool fused_reduce_unknown(const tf_engine *e, tf_prim prim, uint32_t op)
{
    return prim == TF_PRIM_FUSED && op >= TF_FUSED_REDUCE_QUERY(0, 0) &&
           e->desc->abi_minor < REDUCE_ABI_MINOR;
}

bool tf__engine_immediates(const tf_engine *e)
{
    return e->desc->abi_minor >= IMMEDIATES_ABI_MINOR;
}

bool tf__engine_reduced_output(const tf_engine *e)
{
    return e->desc->abi_minor >= REDUCE_ABI_MINOR;
}

/*
 * ABI 1.5: FUSED params carry immediates, which an engine built against an
 * older minor never sees: a call with some is refused, and one without gets
 * the params as its minor defines them (a struct ending above n_imm), so
 * that no 1.5 field reaches it.
 */
tf_status tf__engine_fused_for(const tf_engine *e, const tf_fused_params *p, tf_fused_params *old,
                               const void **params)
{
    /* ABI 1.6: the same for the reduced output, after the immediates */
    if (e->desc->abi_minor >= REDUCE_ABI_MINOR || !TF_ABI_HAS_FIELD(p, tf_fused_params, n_imm))
        return TF_OK;
    bool imm_known = tf__engine_immediates(e);
    const char *what = NULL;
    if (TF_FUSED_PARAMS_REDUCE(p))
        what = "a reduced output (it was built against an engine ABI older than 1.6)";
    else if (!imm_known && p->n_imm)
        what = "immediates (it was built against an engine ABI older than 1.5)";
    if (what)
        return tf__error(TF_ERR_UNSUPPORTED, "engine_execute", NULL,
                         "engine '%s' does not support FUSED %s", e->desc->name, what);
    size_t end = imm_known ? offsetof(tf_fused_params, reduce) : offsetof(tf_fused_params, n_imm);
    if (p->struct_size <= end)
        return TF_OK;
    *old = *p;
    old->struct_size = (uint32_t)end;
    *params = old;
    return TF_OK;
}

bool tf__engine_question_unknown(const tf_engine *e, tf_prim prim, uint32_t op, const uint32_t *dt,
                                 size_t n)
{
    return fused_outputs_unknown(e, prim, op) || fused_reduce_unknown(e, prim, op) ||
           complex_unknown(e, dt, n);
}

const char *tf__engine_unknown_why(const tf_engine *e, tf_prim prim, uint32_t op,
                                   const uint32_t *dt, size_t n)
{
    if (fused_outputs_unknown(e, prim, op))
        return " (it was built against an engine ABI older than 1.3, which has one FUSED output)";
    if (fused_reduce_unknown(e, prim, op))
        return " (it was built against an engine ABI older than 1.6, which has no FUSED reduced "
               "output)";
    if (complex_unknown(e, dt, n))
        return " (it was built against an engine ABI older than 1.4, which has no complex dtypes)";
    return "";
}
