/*
 * test_abi_lists.c - the X-macro lists of engine_abi.h (TF_PRIM_LIST and the
 * sub-operation lists) agree with their enums, and the names the library
 * prints are the lists' names.
 *
 * The enums are generated from the lists, but their *_COUNT_ enumerators and
 * the numbers are written by hand (they are ABI), and every table the engines
 * generate from a list is indexed by value. So at compile time each list must
 * run 0, 1, 2, ... in list order without gaps or repeats, and end at its
 * COUNT_: a list entry added without bumping the count, a value skipped or
 * written twice fails to build here. At run time: tf_prim_name and
 * tf_prim_op_name (core/src/prim_names.c) print each entry's `name`, every
 * `name` is the lower-case spelling of NAME, and no two entries of a list share
 * a name.
 */
#include "tf_test.h"

#include <ctype.h>

#include <tenferro/engine_abi.h>

/*
 * Position of each entry in its list (POS_<list>_<NAME>) and the list's
 * length (POS_<list>_LEN_), as enumerators: compile-time constants.
 */
#define POS_PRIM(NAME, name, value) POS_PRIM_##NAME,
#define POS_UNARY(NAME, name, value) POS_UNARY_##NAME,
#define POS_BINARY(NAME, name, value) POS_BINARY_##NAME,
#define POS_COMPARE(NAME, name, value) POS_COMPARE_##NAME,
#define POS_REDUCE(NAME, name, value) POS_REDUCE_##NAME,
#define POS_GATHER(NAME, name, value) POS_GATHER_##NAME,
#define POS_SCATTER(NAME, name, value) POS_SCATTER_##NAME,
#define POS_FUSED(NAME, name, value) POS_FUSED_##NAME,
enum {
    TF_PRIM_LIST(POS_PRIM) POS_PRIM_LEN_
};
enum {
    TF_UNARY_OP_LIST(POS_UNARY) POS_UNARY_LEN_
};
enum {
    TF_BINARY_OP_LIST(POS_BINARY) POS_BINARY_LEN_
};
enum {
    TF_COMPARE_OP_LIST(POS_COMPARE) POS_COMPARE_LEN_
};
enum {
    TF_REDUCE_OP_LIST(POS_REDUCE) POS_REDUCE_LEN_
};
enum {
    TF_GATHER_MODE_LIST(POS_GATHER) POS_GATHER_LEN_
};
enum {
    TF_SCATTER_COMBINE_LIST(POS_SCATTER) POS_SCATTER_LEN_
};
enum {
    TF_FUSED_KIND_LIST(POS_FUSED) POS_FUSED_LEN_
};

/* Each entry's value is its position, and the enumerator has that value. */
#define AT_PRIM(NAME, name, value) \
    _Static_assert(POS_PRIM_##NAME == (value) && TF_PRIM_##NAME == (value), #NAME);
#define AT_UNARY(NAME, name, value) \
    _Static_assert(POS_UNARY_##NAME == (value) && TF_UNARY_##NAME == (value), #NAME);
#define AT_BINARY(NAME, name, value) \
    _Static_assert(POS_BINARY_##NAME == (value) && TF_BINARY_##NAME == (value), #NAME);
#define AT_COMPARE(NAME, name, value) \
    _Static_assert(POS_COMPARE_##NAME == (value) && TF_COMPARE_##NAME == (value), #NAME);
#define AT_REDUCE(NAME, name, value) \
    _Static_assert(POS_REDUCE_##NAME == (value) && TF_REDUCE_##NAME == (value), #NAME);
#define AT_GATHER(NAME, name, value) \
    _Static_assert(POS_GATHER_##NAME == (value) && TF_GATHER_##NAME == (value), #NAME);
#define AT_SCATTER(NAME, name, value) \
    _Static_assert(POS_SCATTER_##NAME == (value) && TF_SCATTER_##NAME == (value), #NAME);
#define AT_FUSED(NAME, name, value) \
    _Static_assert(POS_FUSED_##NAME == (value) && TF_FUSED_##NAME == (value), #NAME);
TF_PRIM_LIST(AT_PRIM)
TF_UNARY_OP_LIST(AT_UNARY)
TF_BINARY_OP_LIST(AT_BINARY)
TF_COMPARE_OP_LIST(AT_COMPARE)
TF_REDUCE_OP_LIST(AT_REDUCE)
TF_GATHER_MODE_LIST(AT_GATHER)
TF_SCATTER_COMBINE_LIST(AT_SCATTER)
TF_FUSED_KIND_LIST(AT_FUSED)

/* Each list ends at its count (the two enums without one: at their declared size). */
_Static_assert((int)POS_PRIM_LEN_ == (int)TF_PRIM_COUNT_, "TF_PRIM_LIST and TF_PRIM_COUNT_");
_Static_assert((int)POS_UNARY_LEN_ == (int)TF_UNARY_COUNT_, "TF_UNARY_OP_LIST and TF_UNARY_COUNT_");
_Static_assert((int)POS_BINARY_LEN_ == (int)TF_BINARY_COUNT_,
               "TF_BINARY_OP_LIST and TF_BINARY_COUNT_");
_Static_assert((int)POS_COMPARE_LEN_ == (int)TF_COMPARE_COUNT_,
               "TF_COMPARE_OP_LIST and TF_COMPARE_COUNT_");
_Static_assert((int)POS_REDUCE_LEN_ == (int)TF_REDUCE_COUNT_,
               "TF_REDUCE_OP_LIST and TF_REDUCE_COUNT_");
_Static_assert((int)POS_FUSED_LEN_ == (int)TF_FUSED_KIND_COUNT_,
               "TF_FUSED_KIND_LIST and TF_FUSED_KIND_COUNT_");
_Static_assert(POS_GATHER_LEN_ == 2 && POS_SCATTER_LEN_ == 2, "two gather modes and combines");

/* One list as data: upper and lower names by value. */
typedef struct list {
    const char *what;
    int n;
    const char *upper[TF_PRIM_COUNT_ + TF_UNARY_COUNT_];
    const char *lower[TF_PRIM_COUNT_ + TF_UNARY_COUNT_];
} list;

#define ROW(NAME, name, value) [value] = #NAME,
#define ROW_LOWER(NAME, name, value) [value] = #name,
static const list k_lists[] = {
    {"TF_PRIM_LIST", TF_PRIM_COUNT_, {TF_PRIM_LIST(ROW)}, {TF_PRIM_LIST(ROW_LOWER)}},
    {"TF_UNARY_OP_LIST", TF_UNARY_COUNT_, {TF_UNARY_OP_LIST(ROW)}, {TF_UNARY_OP_LIST(ROW_LOWER)}},
    {"TF_BINARY_OP_LIST",
     TF_BINARY_COUNT_,
     {TF_BINARY_OP_LIST(ROW)},
     {TF_BINARY_OP_LIST(ROW_LOWER)}},
    {"TF_COMPARE_OP_LIST",
     TF_COMPARE_COUNT_,
     {TF_COMPARE_OP_LIST(ROW)},
     {TF_COMPARE_OP_LIST(ROW_LOWER)}},
    {"TF_REDUCE_OP_LIST",
     TF_REDUCE_COUNT_,
     {TF_REDUCE_OP_LIST(ROW)},
     {TF_REDUCE_OP_LIST(ROW_LOWER)}},
    {"TF_GATHER_MODE_LIST", 2, {TF_GATHER_MODE_LIST(ROW)}, {TF_GATHER_MODE_LIST(ROW_LOWER)}},
    {"TF_SCATTER_COMBINE_LIST",
     2,
     {TF_SCATTER_COMBINE_LIST(ROW)},
     {TF_SCATTER_COMBINE_LIST(ROW_LOWER)}},
    {"TF_FUSED_KIND_LIST",
     TF_FUSED_KIND_COUNT_,
     {TF_FUSED_KIND_LIST(ROW)},
     {TF_FUSED_KIND_LIST(ROW_LOWER)}},
};

/* Every name is NAME in lower case, and unique within its list. */
static void test_names_spelled(void **state)
{
    (void)state;
    for (size_t l = 0; l < sizeof k_lists / sizeof k_lists[0]; l++) {
        const list *ls = &k_lists[l];
        for (int i = 0; i < ls->n; i++) {
            const char *up = ls->upper[i], *low = ls->lower[i];
            if (up == NULL || low == NULL)
                fail_msg("%s: no entry of value %d", ls->what, i);
            size_t n = strlen(up);
            assert_int_equal(strlen(low), n);
            for (size_t c = 0; c < n; c++) {
                if (tolower((unsigned char)up[c]) != low[c])
                    fail_msg("%s: %s is spelled %s", ls->what, up, low);
            }
            for (int j = 0; j < i; j++) {
                if (strcmp(ls->lower[j], low) == 0)
                    fail_msg("%s: %s twice", ls->what, low);
            }
        }
    }
}

/* The library's names (tf_prim_name, tf_prim_op_name) are the lists'. */
static void test_library_names(void **state)
{
    (void)state;
#define CHECK_PRIM(NAME, name, value) assert_string_equal(tf_prim_name(TF_PRIM_##NAME), #name);
    TF_PRIM_LIST(CHECK_PRIM)
#undef CHECK_PRIM
#define CHECK_OP(PRIM, NAME, name) assert_string_equal(tf_prim_op_name(PRIM, NAME), #name);
#define CHECK_UNARY(NAME, name, value) CHECK_OP(TF_PRIM_UNARY, TF_UNARY_##NAME, name)
#define CHECK_BINARY(NAME, name, value) CHECK_OP(TF_PRIM_BINARY, TF_BINARY_##NAME, name)
#define CHECK_COMPARE(NAME, name, value) CHECK_OP(TF_PRIM_COMPARE, TF_COMPARE_##NAME, name)
#define CHECK_REDUCE(NAME, name, value) CHECK_OP(TF_PRIM_REDUCE, TF_REDUCE_##NAME, name)
    TF_UNARY_OP_LIST(CHECK_UNARY)
    TF_BINARY_OP_LIST(CHECK_BINARY)
    TF_COMPARE_OP_LIST(CHECK_COMPARE)
    TF_REDUCE_OP_LIST(CHECK_REDUCE)
    /* past the lists: the placeholder, never a neighbour's name */
    assert_string_equal(tf_prim_name(TF_PRIM_COUNT_), "?");
    assert_string_equal(tf_prim_op_name(TF_PRIM_UNARY, TF_UNARY_COUNT_), "?");
    assert_string_equal(tf_prim_op_name(TF_PRIM_BINARY, TF_BINARY_COUNT_), "?");
    assert_string_equal(tf_prim_op_name(TF_PRIM_COMPARE, TF_COMPARE_COUNT_), "?");
    assert_string_equal(tf_prim_op_name(TF_PRIM_REDUCE, TF_REDUCE_COUNT_), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_spelled),
        cmocka_unit_test(test_library_names),
    };
    return cmocka_run_group_tests_name("engine ABI lists", tests, NULL, NULL);
}
