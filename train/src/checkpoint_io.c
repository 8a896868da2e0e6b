/*
 * checkpoint_io.c - writing and reading safetensors files (checkpoint.h).
 *
 * Saving: the header is made from the tensors' dtypes and shapes, then each
 * tensor's bytes are written in row-major order straight from its memory
 * (downloaded first when it is in device memory), reordered through a chunk
 * buffer when its layout needs it, into a temporary file renamed over the
 * destination at the end. Loading: the whole header is read and checked
 * (checkpoint_json.c) before any tensor is made; each tensor's bytes are
 * read into memory of its own (through chunk buffers when reordered), and
 * the tensor wraps that memory or is uploaded from it. The chunks of
 * reordered tensors go through a pipe (checkpoint_pipe.c): from 4 MiB of
 * them on, a second thread writes chunk k (or reads chunk k + 1, k + 2)
 * while this one reorders the next, so that the reordering costs little more
 * than the system calls the bytes need anyway.
 */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE (advise_huge_pages) */

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint_internal.h"

/* Bytes moved per write or read of a reordered tensor: small enough to stay in the
   cache between the reordering and the system call that copies it. */
#define CHUNK_BYTES ((size_t)1 << 20)

/* Reordered bytes from which the I/O goes to a thread of its own (checkpoint_pipe.c). */
#define PIPE_MIN_BYTES (4 * CHUNK_BYTES)

static tf_status io_error(const char *fn, const char *what, const char *path)
{
    return tt_fail(TF_ERR_RUNTIME_STATE, "path", "%s: %s '%s': %s", fn, what, path,
                   strerror(errno));
}

/* The failure e of ck_io_at or a pipe: an errno value, or CK_PIPE_EOF while reading
   tensor `name` (NULL: the header). */
static tf_status io_failure(int e, int writing, const char *path, const char *name)
{
    if (e == CK_PIPE_EOF)
        return tt_fail(TF_ERR_VALIDATION, "path",
                       "checkpoint_load: '%s': the file ended while reading %s%.200s%s", path,
                       name ? "tensor '" : "", name ? name : "the header", name ? "'" : "");
    errno = e;
    return writing ? io_error("checkpoint_save", "cannot write", path)
                   : io_error("checkpoint_load", "cannot read", path);
}

/* Rows of axis 0 per chunk, and the chunk's size in bytes. */
static int64_t chunk_rows(size_t rank, const int64_t *shape, size_t esize, size_t *bytes)
{
    size_t row = esize;
    for (size_t m = 1; m < rank; m++)
        row *= (size_t)shape[m];
    int64_t rows = (int64_t)(CHUNK_BYTES / (row ? row : 1));
    if (rows < 1)
        rows = 1;
    if (rows > shape[0])
        rows = shape[0];
    *bytes = (size_t)rows * row;
    return rows;
}

/* ---- saving ---- */

/* The tensor's elements as dense column-major host bytes: *hold and *tmp are freed by the caller. */
static tf_status host_bytes(tf_tensor *t, const void **bytes, tf_tensor **hold, void **tmp)
{
    tf_status st = TF_OK;
    if (!tf_tensor_is_host_accessible(t)) {
        if ((st = tf_engine_download(tf_tensor_engine(t), t, hold)))
            return tt_fail_core(st, "checkpoint_save: download");
        t = *hold;
    }
    size_t n = tf_tensor_numel(t), count;
    if (tf_tensor_is_contiguous(t)) {
        st = tf_tensor_data(t, tf_tensor_dtype(t), bytes, &count);
        return st ? tt_fail_core(st, "checkpoint_save: reading a tensor") : TF_OK;
    }
    if (!(*tmp = tt_alloc(n * tf_dtype_size(tf_tensor_dtype(t)))))
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_save: out of memory");
    if ((st = tf_tensor_copy_to_host(t, tf_tensor_dtype(t), *tmp, n)))
        return tt_fail_core(st, "checkpoint_save: reading a strided tensor");
    *bytes = *tmp;
    return TF_OK;
}

/* Writes one tensor's bytes in row-major order at file offset `at`. */
static tf_status write_tensor(ck_pipe *pp, tf_tensor *t, const char *path, uint64_t at)
{
    const void *bytes = NULL;
    tf_tensor *hold = NULL;
    void *tmp = NULL;
    tf_status st = host_bytes(t, &bytes, &hold, &tmp);
    size_t rank = tf_tensor_rank(t), esize = tf_dtype_size(tf_tensor_dtype(t));
    const int64_t *shape = tf_tensor_shape(t);
    size_t nbytes = tf_tensor_numel(t) * esize;
    int e = 0;
    if (!st && nbytes && ck_layout_trivial(rank, shape)) {
        e = ck_io_at(pp->fd, 1, (void *)bytes, nbytes, at);
    } else if (!st && nbytes) {
        size_t cb;
        int64_t rows = chunk_rows(rank, shape, esize, &cb);
        for (int64_t i0 = 0; i0 < shape[0]; i0 += rows) {
            int64_t i1 = i0 + rows < shape[0] ? i0 + rows : shape[0];
            size_t n = cb / (size_t)rows * (size_t)(i1 - i0);
            void *buf = ck_pipe_buffer(pp);
            if (!buf)
                break; /* a write failed: ck_pipe_close says which */
            ck_layout_rows((void *)bytes, buf, rank, shape, esize, i0, i1, 1);
            ck_pipe_submit(pp, n, at);
            at += n;
        }
    }
    if (!st && (e || (e = ck_pipe_error(pp))))
        st = io_failure(e, 1, path, NULL);
    tt_free(tmp);
    tf_tensor_release(hold);
    return st;
}

/* The largest chunk any reordered tensor of the n entries moves, and their bytes in all. */
static size_t chunk_need(const ck_entry *e, size_t n, uint64_t *reordered)
{
    size_t most = 0;
    *reordered = 0;
    for (size_t k = 0; k < n; k++) {
        if (e[k].end == e[k].begin || ck_layout_trivial(e[k].rank, e[k].shape))
            continue;
        size_t cb;
        chunk_rows(e[k].rank, e[k].shape, tf_dtype_size(e[k].dtype), &cb);
        most = cb > most ? cb : most;
        *reordered += e[k].end - e[k].begin;
    }
    return most;
}

/* A pipe for the entries' reordered chunks (threaded when they are many). */
static tf_status open_pipe(ck_pipe *pp, int fd, int writing, const ck_entry *e, size_t n)
{
    uint64_t reordered;
    size_t cb = chunk_need(e, n, &reordered);
    if (ck_pipe_open(pp, fd, writing, cb ? cb : 1, reordered >= PIPE_MIN_BYTES) != 0)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "%s: out of memory",
                       writing ? "checkpoint_save" : "checkpoint_load");
    return TF_OK;
}

/* The header of ck: entries in the order they are written (by element size, largest
   first, then as added). Names and metadata are borrowed from ck. */
static tf_status save_header(const tf_checkpoint *ck, ck_header *h, size_t *order)
{
    memset(h, 0, sizeof *h);
    h->e = tt_calloc(ck->n ? ck->n : 1, sizeof *h->e);
    if (!h->e)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_save: out of memory");
    size_t k = 0;
    uint64_t at = 0;
    for (size_t size = 8; size >= 1; size /= 2) {
        for (size_t i = 0; i < ck->n; i++) {
            tf_tensor *t = ck->items[i].tensor;
            if (tf_dtype_size(tf_tensor_dtype(t)) != size)
                continue;
            ck_entry *e = &h->e[k];
            order[k++] = i;
            e->name = ck->items[i].name;
            e->dtype = tf_tensor_dtype(t);
            e->rank = tf_tensor_rank(t);
            memcpy(e->shape, tf_tensor_shape(t), e->rank * sizeof e->shape[0]);
            e->begin = at;
            at += (uint64_t)tf_tensor_numel(t) * size;
            e->end = at;
        }
    }
    h->n = k;
    h->meta = ck->meta;
    h->n_meta = ck->n_meta;
    return TF_OK;
}

/* A new temporary file beside path: *fd open for writing, its name in tmp. */
static tf_status open_temporary(const char *path, char *tmp, size_t cap, int *fd)
{
    static atomic_uint counter;
    for (int tries = 0; tries < 100; tries++) {
        unsigned n = atomic_fetch_add(&counter, 1);
        if ((size_t)snprintf(tmp, cap, "%s.tmp%ld.%u", path, (long)getpid(), n) >= cap)
            return tt_fail(TF_ERR_VALIDATION, "path", "checkpoint_save: the path is too long");
        *fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (*fd >= 0)
            return TF_OK;
        if (errno != EEXIST)
            break;
    }
    return io_error("checkpoint_save", "cannot create a file beside", path);
}

static tf_status write_file(const tf_checkpoint *ck, int fd, const char *path)
{
    ck_header h;
    size_t *order = tt_calloc(ck->n ? ck->n : 1, sizeof *order);
    char *json = NULL;
    size_t len = 0;
    tf_status st = order ? save_header(ck, &h, order)
                         : tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_save: out of memory");
    if (!st)
        st = ck_header_write(&h, &json, &len);
    unsigned char head[8];
    for (int b = 0; b < 8; b++)
        head[b] = (unsigned char)((uint64_t)len >> (8 * b));
    int e = 0;
    if (!st && ((e = ck_io_at(fd, 1, head, 8, 0)) || (e = ck_io_at(fd, 1, json, len, 8))))
        st = io_failure(e, 1, path, NULL);
    ck_pipe pp;
    bool piped = !st && !(st = open_pipe(&pp, fd, 1, h.e, h.n));
    for (size_t k = 0; !st && k < h.n; k++)
        st = write_tensor(&pp, ck->items[order[k]].tensor, path, 8 + len + h.e[k].begin);
    if (piped && (e = ck_pipe_close(&pp)) && !st)
        st = io_failure(e, 1, path, NULL);
    if (order)
        tt_free(h.e);
    tt_free(order);
    tt_free(json);
    return st;
}

TF_TRAIN_API tf_status tf_checkpoint_save(const tf_checkpoint *ck, const char *path)
{
    if (!ck || !path || !path[0])
        return tt_fail(TF_ERR_VALIDATION, !ck ? "ck" : "path",
                       "checkpoint_save: NULL or empty argument");
    size_t cap = strlen(path) + 64;
    char *tmp = tt_alloc(cap);
    if (!tmp)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_save: out of memory");
    int fd = -1;
    tf_status st = open_temporary(path, tmp, cap, &fd);
    if (!st)
        st = write_file(ck, fd, path);
    if (fd >= 0 && close(fd) != 0 && !st)
        st = io_error("checkpoint_save", "cannot write", path);
    if (!st && rename(tmp, path) != 0)
        st = io_error("checkpoint_save", "cannot rename the written file to", path);
    if (st && fd >= 0)
        unlink(tmp);
    tt_free(tmp);
    return st;
}

/* ---- loading ---- */

static void release_buffer(void *user, void *data)
{
    (void)user;
    tt_free(data);
}

/*
 * Asks the kernel for transparent huge pages on the whole 2 MiB pages inside
 * [mem, mem + n), memory a reordered tensor is about to be written into. A
 * chunk of rows lands in every column of the column-major tensor, so each
 * chunk writes a little into each of its 4 KiB pages: with small pages that
 * costs a fault per page and a TLB miss per column, and loading measured
 * 0.76-0.79 x a plain read of the same bytes; with 2 MiB pages 1.01-1.06
 * (docs/performance.md, "Training"). Only advice: the contents are the same,
 * and where the kernel declines (THP off, memory not anonymous) nothing else
 * changes.
 */
static void advise_huge_pages(void *mem, size_t n)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t lo = ((uintptr_t)mem + huge - 1) & ~(huge - 1);
    uintptr_t hi = ((uintptr_t)mem + n) & ~(huge - 1);
    if (hi > lo)
        (void)madvise((void *)lo, (size_t)(hi - lo), MADV_HUGEPAGE);
#else
    (void)mem;
    (void)n;
#endif
}

/* Reads one entry's bytes (at data + e->begin) into column-major memory of its own. */
static tf_status read_entry(ck_pipe *pp, uint64_t data, const ck_entry *e, const char *path,
                            void **out)
{
    size_t esize = tf_dtype_size(e->dtype), nbytes = (size_t)(e->end - e->begin);
    char *mem = tt_alloc(nbytes);
    if (!mem)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_load: out of memory");
    int err = 0;
    if (ck_layout_trivial(e->rank, e->shape)) {
        err = ck_io_at(pp->fd, 0, mem, nbytes, data + e->begin);
    } else {
        advise_huge_pages(mem, nbytes);
        size_t cb;
        int64_t rows = chunk_rows(e->rank, e->shape, esize, &cb), asked = 0;
        for (int64_t i0 = 0; i0 < e->shape[0]; i0 += rows) {
            /* keep every buffer of the pipe asked for, ahead of the chunk reordered */
            for (; asked < e->shape[0] && asked < i0 + rows * (int64_t)pp->slots; asked += rows) {
                int64_t a1 = asked + rows < e->shape[0] ? asked + rows : e->shape[0];
                uint64_t at = data + e->begin + (uint64_t)(cb / (size_t)rows) * (uint64_t)asked;
                if (ck_pipe_request(pp, cb / (size_t)rows * (size_t)(a1 - asked), at) != 0)
                    break;
            }
            const void *buf = ck_pipe_wait(pp);
            if (!buf)
                break;
            int64_t i1 = i0 + rows < e->shape[0] ? i0 + rows : e->shape[0];
            ck_layout_rows(mem, (void *)buf, e->rank, e->shape, esize, i0, i1, 0);
        }
        err = ck_pipe_error(pp); /* after a failure, ck_pipe_close drops what is still asked */
    }
    tf_status st = err ? io_failure(err, 0, path, e->name) : TF_OK;
    for (size_t i = 0; !st && e->dtype == TF_BOOL && i < nbytes; i++)
        if ((unsigned char)mem[i] > 1)
            st = tt_fail(TF_ERR_VALIDATION, "path",
                         "checkpoint_load: '%s': tensor '%.200s': a BOOL byte is 0x%02x, not 0 "
                         "or 1",
                         path, e->name, (unsigned char)mem[i]);
    if (st)
        tt_free(mem);
    else
        *out = mem;
    return st;
}

/* The tensor of one entry: host memory wrapped, or uploaded to engine. */
static tf_status load_entry(ck_pipe *pp, uint64_t data, const ck_entry *e, const char *path,
                            tf_engine *engine, tf_tensor **out)
{
    size_t numel = (size_t)(e->end - e->begin) / tf_dtype_size(e->dtype);
    tf_tensor *t = NULL;
    tf_status st;
    if (numel == 0) {
        st = tf_tensor_from_host(e->dtype, e->rank, e->shape, NULL, 0, &t);
    } else {
        void *mem = NULL;
        if ((st = read_entry(pp, data, e, path, &mem)))
            return st;
        st = tf_tensor_wrap_host(e->dtype, e->rank, e->shape, mem, numel, release_buffer, NULL,
                                 &t);
        if (st)
            tt_free(mem);
    }
    if (st)
        return tt_fail_core(st, "checkpoint_load: tensor '%.200s'", e->name);
    if (engine) {
        tf_tensor *dev = NULL;
        st = tf_engine_upload(engine, t, &dev);
        tf_tensor_release(t);
        if (st)
            return tt_fail_core(st, "checkpoint_load: uploading tensor '%.200s'", e->name);
        t = dev;
    }
    *out = t;
    return TF_OK;
}

/* The header's length and bytes: *json (tt_free it) and *data, where the data begins. */
static tf_status read_header(int fd, const char *path, char **json, uint64_t *len, uint64_t *data,
                             uint64_t *data_len)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return io_error("checkpoint_load", "cannot stat", path);
    if (!S_ISREG(sb.st_mode))
        return tt_fail(TF_ERR_VALIDATION, "path", "checkpoint_load: '%s' is not a regular file",
                       path);
    uint64_t size = (uint64_t)sb.st_size;
    unsigned char head[8];
    int e = size < 8 ? 0 : ck_io_at(fd, 0, head, 8, 0);
    if (size < 8)
        return tt_fail(TF_ERR_VALIDATION, "path",
                       "checkpoint_load: '%s' has %llu bytes, fewer than the 8 of the header "
                       "length",
                       path, (unsigned long long)size);
    if (e)
        return io_failure(e, 0, path, NULL);
    uint64_t n = 0;
    for (int b = 7; b >= 0; b--)
        n = (n << 8) | head[b];
    if (n < 2 || n > TF_CHECKPOINT_MAX_HEADER || n > size - 8)
        return tt_fail(TF_ERR_VALIDATION, "path",
                       "checkpoint_load: '%s': the header length %llu is %s", path,
                       (unsigned long long)n,
                       n < 2 ? "too small for a JSON object"
                       : n > TF_CHECKPOINT_MAX_HEADER ? "above the limit of 100,000,000 bytes"
                                                      : "past the end of the file");
    char *h = tt_alloc((size_t)n + 1);
    if (!h)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_load: out of memory");
    if ((e = ck_io_at(fd, 0, h, (size_t)n, 8))) {
        tt_free(h);
        return e == CK_PIPE_EOF
                   ? tt_fail(TF_ERR_VALIDATION, "path", "checkpoint_load: '%s' is truncated", path)
                   : io_failure(e, 0, path, NULL);
    }
    h[n] = '\0';
    *json = h;
    *len = n;
    *data = 8 + n;
    *data_len = size - 8 - n;
    return TF_OK;
}

/* Makes every entry's tensor into ck, taking the names and metadata over from h. */
static tf_status fill(tf_checkpoint *ck, ck_header *h, int fd, uint64_t data, const char *path,
                      tf_engine *engine)
{
    ck_pipe pp;
    tf_status st = open_pipe(&pp, fd, 0, h->e, h->n);
    bool piped = !st;
    for (size_t i = 0; !st && i < h->n; i++) {
        tf_tensor *t = NULL;
        st = load_entry(&pp, data, &h->e[i], path, engine, &t);
        if (!st && (st = ck_push(ck, h->e[i].name, t)))
            tf_tensor_release(t);
        if (!st)
            h->e[i].name = NULL;
    }
    if (piped)
        ck_pipe_close(&pp); /* every failure is known already */
    if (st)
        return st;
    ck->meta = h->meta;
    ck->n_meta = ck->cap_meta = h->n_meta;
    h->meta = NULL;
    h->n_meta = 0;
    return TF_OK;
}

TF_TRAIN_API tf_status tf_checkpoint_load(const char *path, tf_engine *engine,
                                          tf_checkpoint **out)
{
    if (!path || !out)
        return tt_fail(TF_ERR_VALIDATION, !path ? "path" : "out", "checkpoint_load: NULL argument");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return io_error("checkpoint_load", "cannot open", path);
    char *json = NULL;
    uint64_t len = 0, data = 0, data_len = 0;
    ck_header h;
    memset(&h, 0, sizeof h);
    tf_checkpoint *ck = NULL;
    tf_status st = read_header(fd, path, &json, &len, &data, &data_len);
    if (!st)
        st = ck_header_parse(path, json, (size_t)len, data_len, &h);
    if (!st)
        st = tf_checkpoint_create(&ck);
    if (!st)
        st = fill(ck, &h, fd, data, path, engine);
    close(fd);
    ck_header_free(&h);
    tt_free(json);
    if (st) {
        tf_checkpoint_destroy(ck);
        return st;
    }
    *out = ck;
    return TF_OK;
}
