/*
 * tf_gen_internal.h - the generator's state, shared by tf_gen.c (leaves,
 * validation, completion) and tf_gen_ops.c (the op builders and margins).
 */
#ifndef TF_GEN_INTERNAL_H
#define TF_GEN_INTERNAL_H

#include <stdlib.h>

#include "tf_gen.h"

#define TFG_MAX_VALUES 1024

typedef struct gen {
    tfg_rng rng;
    const tfg_options *opt;
    tfp_program *p;
    tfp_run run;                    /* the program so far, run on the CPU engine in f64 */
    tfp_data vals[TFG_MAX_VALUES];  /* every value so far, read back */
    uint32_t uses[TFG_MAX_VALUES];  /* how many op arguments name it */
    uint32_t identity[5];           /* value id of the constant c * I of size m (0: none) */
} gen;

bool tfg__chance(gen *g, double p);
double tfg__datum(gen *g, double lo, double hi);
size_t tfg__numel(uint32_t rank, const int64_t *shape);
/* NumPy broadcast of a and b's shapes; false when they do not broadcast. */
bool tfg__broadcast(const tfp_data *a, const tfp_data *b, uint32_t *rank, int64_t *shape);
/* The element of arg that element e of the broadcast result res reads. */
size_t tfg__bcast_index(const tfp_data *arg, const tfp_data *res, size_t e);
const tfp_data *tfg__val(gen *g, uint32_t id);
/*
 * The most elements a value may have (40000 in big programs, 120 otherwise).
 * tfg__try drops a larger result after running it; builders whose result can
 * be far larger than their operands (broadcasting two values against each
 * other, broadcast_in_dim) check it before, so that the engine is never asked
 * for an intermediate larger than the machine: [32800, 1] against [32800] is
 * 8.6 GB of f64.
 */
size_t tfg__value_limit(const gen *g);
bool tfg__is_float(gen *g, uint32_t id);
uint32_t tfg__pick_value(gen *g, bool (*want)(gen *, uint32_t, const void *), const void *ctx);
/*
 * Appends op (its attributes taken over) and runs it: kept, with its result's
 * value id in *id, when the library accepts it, the result is finite, at most
 * 1e3 in magnitude and not too large, and tfg__margins holds; dropped
 * otherwise.
 */
bool tfg__try(gen *g, tfp_op *op, uint32_t *id);
/* Whether op's operands keep their margins (tf_gen.h), given its result. */
bool tfg__margins(gen *g, const tfp_op *op, const tfp_data *res);
/* Adds one op or one pattern of ops (which may all be refused). */
void tfg__grow(gen *g);

#endif /* TF_GEN_INTERNAL_H */
