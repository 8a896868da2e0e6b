/*
 * checkpoint_layout.c - reordering tensors between tenferro's column-major
 * memory and safetensors' row-major bytes (checkpoint.h "Layout").
 *
 * Element (i0, ..., ik) of shape [d0, ..., dk] lives at sum i_m cs_m in
 * column-major order (cs_m = d0 ... d_{m-1}) and at sum i_m rs_m in row-major
 * order (rs_m = d_{m+1} ... dk). The copy walks the middle axes 1 .. k-1 one
 * index at a time and, for each, moves a 2-D block between axis 0 (stride 1
 * in column-major memory) and axis k (stride 1 in row-major memory) in
 * TILE x TILE tiles, so that both sides are read and written a cache line at
 * a time. Rows [i0, i1) of axis 0 at a time: axis 0 is the outermost axis
 * of row-major order, so a range of its rows is one contiguous chunk of the
 * file.
 */
#include <string.h>

#include "checkpoint_internal.h"

#define TILE 16

int ck_layout_trivial(size_t rank, const int64_t *shape)
{
    size_t big = 0;
    for (size_t m = 0; m < rank; m++)
        big += shape[m] > 1;
    return big <= 1;
}

/* One 2-D block: rows [i0, i1) of axis 0 by the whole last axis (extent c). */
typedef struct block {
    char *cm, *rm;
    int64_t i0, i1, c;
    int64_t cm_last; /* column-major stride of the last axis */
    int64_t rm_row;  /* row-major stride of axis 0 */
    int64_t cm_base, rm_base;
} block;

#define BLOCK_COPY_(T)                                                                  \
    static void block_##T(const block *b, int to_rm)                                   \
    {                                                                                  \
        T *cm = (T *)(void *)b->cm + b->cm_base;                                       \
        T *rm = (T *)(void *)b->rm + b->rm_base;                                       \
        for (int64_t ib = b->i0; ib < b->i1; ib += TILE) {                             \
            int64_t ie = ib + TILE < b->i1 ? ib + TILE : b->i1;                        \
            for (int64_t jb = 0; jb < b->c; jb += TILE) {                              \
                int64_t je = jb + TILE < b->c ? jb + TILE : b->c;                      \
                for (int64_t i = ib; i < ie; i++) {                                    \
                    T *r = rm + (i - b->i0) * b->rm_row;                               \
                    if (to_rm)                                                         \
                        for (int64_t j = jb; j < je; j++)                              \
                            r[j] = cm[i + j * b->cm_last];                             \
                    else                                                               \
                        for (int64_t j = jb; j < je; j++)                              \
                            cm[i + j * b->cm_last] = r[j];                             \
                }                                                                      \
            }                                                                          \
        }                                                                              \
    }
BLOCK_COPY_(uint8_t)
BLOCK_COPY_(uint32_t)
BLOCK_COPY_(uint64_t)

static void block_copy(const block *b, size_t esize, int to_rm)
{
    if (esize == 8)
        block_uint64_t(b, to_rm);
    else if (esize == 4)
        block_uint32_t(b, to_rm);
    else
        block_uint8_t(b, to_rm);
}

void ck_layout_rows(void *cm, void *rm, size_t rank, const int64_t *shape, size_t esize,
                    int64_t i0, int64_t i1, int to_rm)
{
    int64_t cs[TF_MAX_RANK], rs[TF_MAX_RANK];
    cs[0] = 1;
    for (size_t m = 1; m < rank; m++)
        cs[m] = cs[m - 1] * shape[m - 1];
    rs[rank - 1] = 1;
    for (size_t m = rank - 1; m > 0; m--)
        rs[m - 1] = rs[m] * shape[m];
    if (i0 >= i1 || cs[rank - 1] * shape[rank - 1] == 0)
        return;
    if (rank == 1) {
        memcpy(to_rm ? rm : (char *)cm + i0 * (int64_t)esize,
               to_rm ? (char *)cm + i0 * (int64_t)esize : rm, (size_t)(i1 - i0) * esize);
        return;
    }
    block b = {cm, rm, i0, i1, shape[rank - 1], cs[rank - 1], rs[0], 0, 0};
    int64_t idx[TF_MAX_RANK] = {0}; /* the middle axes' odometer, last middle axis fastest */
    for (;;) {
        b.cm_base = b.rm_base = 0;
        for (size_t m = 1; m + 1 < rank; m++) {
            b.cm_base += idx[m] * cs[m];
            b.rm_base += idx[m] * rs[m];
        }
        block_copy(&b, esize, to_rm);
        size_t m = rank - 1;
        while (m > 1 && ++idx[m - 1] == shape[m - 1])
            idx[--m] = 0;
        if (m <= 1)
            return;
    }
}
