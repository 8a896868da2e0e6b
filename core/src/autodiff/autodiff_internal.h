/*
 * autodiff_internal.h - automatic differentiation (core/src/autodiff): the
 * graph walk and its fingerprint, prepared derivative programs, backward,
 * grad, vjp and jvp, and the reverse rules' fused programs summed into the
 * running cotangents. Uses every layer up to the ops.
 */
#ifndef TF_AUTODIFF_INTERNAL_H
#define TF_AUTODIFF_INTERNAL_H

#include "rule_fx.h"

/* ---- the graph walk and prepared programs (graph.c) ---- */

typedef struct graph {
    tf_eager **at; /* topological order: inputs before results */
    size_t n, cap;
    tf_eager **keys; /* open-addressing map eager -> index, for tensors */
    size_t *vals;    /* whose walk_id another live walk holds */
    size_t mask;
    size_t used;               /* keys in the map */
    uint64_t hash;             /* structural fingerprint */
    uint64_t id;               /* this walk's id, 0 before it begins */
    uint64_t stale_below;      /* walk ids below this one had ended when it began */
    struct graph *prev, *next; /* the list of live walks */
} graph;

/* One step of the reverse program: run the rule of graph index `at`. */
typedef struct step {
    uint32_t at;
    uint32_t need_mask; /* bit i: input i needs a cotangent (inputs beyond 31 always do) */
} step;

typedef struct program {
    size_t n_nodes; /* graph size it was prepared for */
    size_t n_steps;
    step *steps; /* in execution order */
    bool active; /* does the output depend on a target at all */
} program;

/*
 * Walks from `root` through recorded nodes (only through tracked tensors
 * when `tracked_only`), giving every tensor reached an index in post-order
 * (g->at) and hashing the structural fingerprint (g->hash). g starts
 * zeroed; tf__graph_free ends the walk, also after a failure. Errors:
 * TF_ERR_OUT_OF_MEMORY.
 */
tf_status tf__graph_walk(graph *g, tf_eager *root, bool tracked_only);
void tf__graph_free(graph *g);

/* The index of e once walked, or g->n + 1 if the walk did not reach it: the
   mark in e itself, else the walk's map (tf__graph_lookup_map). Inline: the
   reverse pass asks it for every edge. */
size_t tf__graph_lookup_map(const graph *g, const tf_eager *e);
static inline size_t tf__graph_lookup(const graph *g, const tf_eager *e)
{
    if (atomic_load_explicit(&((tf_eager *)e)->walk_id, memory_order_relaxed) == g->id)
        return e->walk_index;
    return tf__graph_lookup_map(g, e);
}

/* Whether e is a target: wrt itself, or with wrt NULL any leaf with a slot. */
bool tf__graph_is_target(const tf_eager *e, const tf_eager *wrt);

/* needs[i]: graph index i reaches a target through recorded ops (tf__free);
   NULL when out of memory. */
bool *tf__graph_needs(const graph *g, const tf_eager *wrt);

/*
 * The reverse program of g towards wrt (NULL: every leaf with a slot) for
 * `mode`, from rt's prepared-derivative cache or prepared and cached now;
 * the caller owns it (tf__program_free). NULL when out of memory.
 */
program *tf__program_get(tf_runtime *rt, graph *g, const tf_eager *wrt, uint64_t mode);
void tf__program_free(void *p);

/*
 * Adds the value of `result` into *acc (*acc NULL: *acc becomes it), as
 * tf__accumulate does, with one FUSED call: the program's inputs other than
 * constants all have the shape and dtype of `like` (the result's
 * cotangent, which has those of the tensor whose cotangent *acc is). A
 * result that is an input as it is goes through tf__accumulate.
 */
tf_status tf__fx_accumulate(tf_session *s, tf_fx *fx, uint32_t result, const tf_eager *like,
                            tf_eager **acc);

#endif /* TF_AUTODIFF_INTERNAL_H */
