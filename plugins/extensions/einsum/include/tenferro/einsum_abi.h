/*
 * tenferro/einsum_abi.h - what the tenferro.einsum extension module and its
 * callers share: the op's name and signature, the options of a contraction
 * path, and the planner interface (a table of the module's own functions,
 * extension_abi.h "Interfaces") that computes and describes paths without a
 * session, as numpy.einsum_path does.
 *
 * Applications include tenferro/einsum.h (which includes this header and
 * adds the typed calls); the module includes only this one and
 * extension_abi.h. Installed with the SDK. The guide is docs/einsum.md.
 *
 * The op, called by name (tf_session_call, or tf_einsum in einsum.h):
 *   tenferro.einsum.einsum(subscripts: string, optimize: i64,
 *                          memory_limit: f64, operands: tensor list) -> out
 * NumPy's einsum: explicit ("ij,jk->ik") and implicit ("ij,jk") output,
 * "..." broadcasting, indices repeated in one operand (diagonals, traces),
 * indices summed in one operand only, outer products, rank-0 operands, any
 * number of operands. An index is an ASCII letter or any non-ASCII Unicode
 * character (UTF-8), as in opt_einsum. A composite op (extension ABI 1.2):
 * it runs as built-in ops - one DOT_GENERAL per pairwise step, views for
 * permutations and diagonals, reductions for indices summed in one operand
 * - so it runs on every engine and differentiates to any order.
 */
#ifndef TENFERRO_EINSUM_ABI_H
#define TENFERRO_EINSUM_ABI_H

#include <stddef.h>
#include <stdint.h>

#include <tenferro/extension_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TF_EINSUM_MODULE_ID "tenferro.einsum"
#define TF_EINSUM_OP "tenferro.einsum.einsum"
/* The planner interface's name for tf_extension_interface. */
#define TF_EINSUM_PLANNER_V1 "tenferro.einsum.planner.v1"

/* How the contraction path is chosen. Values are ABI; only ever appended. */
typedef enum tf_einsum_optimize {
    /* optimal for up to 10 operands, dp up to 16, beyond that a search of
       fixed effort (greedy restarts, annealing, reconfiguration): the same
       path on every run. */
    TF_EINSUM_AUTO = 0,
    /* Exhaustive over every contraction tree, outer products included
       (dynamic programming over subsets, bounded by the greedy cost): the
       least total flops. Up to 16 operands. */
    TF_EINSUM_OPTIMAL = 1,
    /* Dynamic programming over connected subnetworks (no outer products
       but between disconnected parts), bounded by a growing cost cap: the
       least flops of such trees. Up to 64 operands, fast on sparse
       networks of a few dozen. */
    TF_EINSUM_DP = 2,
    /* Greedy: the pair that shrinks memory the most, then the fewest flops. */
    TF_EINSUM_GREEDY = 3,
    /* Randomized greedy restarts, then simulated annealing over subtree
       reconfigurations, within a time budget (search_seconds). */
    TF_EINSUM_SEARCH = 4
} tf_einsum_optimize;

/* Options of a path; zero fields take the defaults. Size-prefixed. */
typedef struct tf_einsum_options {
    uint32_t struct_size;
    uint32_t optimize;     /* tf_einsum_optimize */
    double memory_limit;   /* largest intermediate allowed, in elements; 0: none */
    double search_seconds; /* TF_EINSUM_SEARCH's budget; 0: 1 second */
    uint64_t seed;         /* TF_EINSUM_SEARCH's random stream; 0: a fixed one */
    uint32_t max_rank;     /* most axes of an intermediate; 0: no limit (executions
                              always use TF_MAX_RANK) */
    uint32_t reserved0;
} tf_einsum_options;

/* One pairwise step of a path. */
typedef struct tf_einsum_step {
    /* Tensors in "SSA" numbering: 0 .. n-1 the operands, n + k the result of step k. */
    uint32_t lhs, rhs;
    /* numpy.einsum_path's numbering: positions in the current list of tensors,
       where each step removes its two and appends its result. */
    uint32_t lhs_pos, rhs_pos;
    double flops;     /* numpy's count: product of every extent involved, x2 when summing */
    double size;      /* elements of the result */
    uint32_t scaling; /* how many distinct indices the step involves */
    uint32_t reserved0;
    const char *subscripts; /* the step as an einsum, e.g. "jk,ij->ik" (in the path's storage) */
} tf_einsum_step;

/* A contraction path and its cost; freed with tf_einsum_planner.path_free. */
typedef struct tf_einsum_path {
    uint32_t struct_size;
    uint32_t n_operands;
    uint32_t n_steps;  /* n_operands - 1 (0 for one operand) */
    uint32_t optimize; /* the method that chose it (AUTO resolved) */
    const tf_einsum_step *steps;
    const char *subscripts; /* the whole expression in explicit form ("ij,jk->ik") */
    double flops;           /* sum over steps (numpy's "Optimized FLOP count" minus 1) */
    double log10_flops;
    double naive_flops;          /* numpy's "Naive FLOP count": one loop over every index */
    double largest_intermediate; /* elements of the largest step result */
    double prep_flops;           /* diagonals and one-operand sums before the path */
    uint32_t scaling;            /* largest step scaling */
    uint32_t reserved0;
} tf_einsum_path;

/* Why a planner call failed: what the session op reports in its message. */
typedef struct tf_einsum_error {
    uint32_t struct_size;
    uint32_t reserved0;
    int64_t position; /* byte offset in the subscripts, -1 when not about them */
    int64_t operand;  /* the operand concerned, -1 if none */
    char message[512];
} tf_einsum_error;

/*
 * The planner interface (tf_extension_interface(module, TF_EINSUM_PLANNER_V1)).
 * Pure functions of their arguments; any thread; memory from the C library,
 * freed by the matching free function.
 */
typedef struct tf_einsum_planner {
    uint32_t struct_size;
    uint32_t reserved0;
    /*
     * The contraction path of `subscripts` for n operands of the given ranks
     * and shapes (shapes[i] has ranks[i] extents; ranks at most TF_MAX_RANK).
     * options may be NULL (defaults). On success *out is the path (free with
     * path_free). Errors: TF_ERR_VALIDATION (malformed subscripts, with
     * error->position; bad options), TF_ERR_SHAPE_MISMATCH (extents of an
     * index disagree; error->operand), TF_ERR_UNSUPPORTED (no path within
     * memory_limit or max_rank), TF_ERR_OUT_OF_MEMORY. `error` may be NULL.
     */
    tf_status (*path)(const char *subscripts, size_t n, const uint32_t *ranks,
                      const int64_t *const *shapes, const tf_einsum_options *options,
                      tf_einsum_path **out, tf_einsum_error *error);
    void (*path_free)(tf_einsum_path *path);
    /*
     * The path as numpy.einsum_path prints it (json 0), or as one JSON
     * object (json 1: subscripts, path, steps with flops and size, totals),
     * NUL-terminated; free with text_free.
     */
    tf_status (*format)(const tf_einsum_path *path, int json, char **text);
    void (*text_free)(char *text);
} tf_einsum_planner;

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_EINSUM_ABI_H */
