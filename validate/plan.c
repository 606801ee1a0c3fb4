/* plan.c: sweep sizes, element counts and bus-bandwidth factors, following nccl-tests.
 * Invariant: a row's algbw is its size over its time; busbw is algbw times the factor. */
#include "plan.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

G_DEFINE_QUARK(icsv_error, icsv_error)

bool icsv_parse_size(const char *what, const char *s, uint64_t *out, GError **err)
{
    char *end = NULL;
    errno = 0;
    double v = s ? strtod(s, &end) : 0.0;
    if (!s || end == s || errno != 0 || !isfinite(v) || v < 0 || isspace((unsigned char)*s)) {
        g_set_error(err, ICSV_ERROR, ICSV_ERROR_INPUT,
                    "%s: expected a size in bytes (e.g. 8, 64K, 128M, 8G), got '%s'", what,
                    s ? s : "");
        return false;
    }
    double unit = 1;
    switch (*end) {
    case 'k':
    case 'K':
        unit = 1024.0;
        end++;
        break;
    case 'm':
    case 'M':
        unit = 1024.0 * 1024;
        end++;
        break;
    case 'g':
    case 'G':
        unit = 1024.0 * 1024 * 1024;
        end++;
        break;
    default:
        break;
    }
    if (*end != '\0' || v * unit > 4611686018427387904.0 /* 2^62 */) {
        g_set_error(err, ICSV_ERROR, ICSV_ERROR_INPUT,
                    "%s: expected a size in bytes (e.g. 8, 64K, 128M, 8G), got '%s'", what, s);
        return false;
    }
    *out = (uint64_t)(v * unit);
    return true;
}

static uint64_t next_size(uint64_t size, uint64_t factor, uint64_t step)
{
    return factor > 1 ? size * factor : size + step;
}

uint64_t *icsv_plan_sizes(uint64_t min_bytes, uint64_t max_bytes, uint64_t step_factor,
                          uint64_t step_bytes, size_t *n, GError **err)
{
    if (min_bytes > max_bytes) {
        g_set_error(err, ICSV_ERROR, ICSV_ERROR_INPUT,
                    "-b %" G_GUINT64_FORMAT " is larger than -e %" G_GUINT64_FORMAT, min_bytes,
                    max_bytes);
        return NULL;
    }
    if (step_factor <= 1 && step_bytes == 0 && min_bytes < max_bytes) {
        g_set_error_literal(err, ICSV_ERROR, ICSV_ERROR_INPUT,
                            "-f <= 1 and -i 0: the sweep never reaches -e");
        return NULL;
    }
    if (step_factor > 1 && min_bytes == 0 && max_bytes > 0) {
        g_set_error_literal(err, ICSV_ERROR, ICSV_ERROR_INPUT,
                            "-b 0 with -f > 1: the sweep never leaves 0 (use -b 1 or more)");
        return NULL;
    }
    GArray *sizes = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    uint64_t size = min_bytes;
    for (;;) {
        if (sizes->len == ICSV_PLAN_MAX_SIZES) {
            g_set_error(err, ICSV_ERROR, ICSV_ERROR_INPUT,
                        "the sweep has more than %d sizes; raise -f or -i", ICSV_PLAN_MAX_SIZES);
            g_array_free(sizes, TRUE);
            return NULL;
        }
        g_array_append_val(sizes, size);
        uint64_t next = next_size(size, step_factor, step_bytes);
        if (next > max_bytes || next <= size) /* past the end, or overflowed */
            break;
        size = next;
    }
    *n = sizes->len;
    return (uint64_t *)g_array_free(sizes, FALSE);
}

void icsv_plan_counts(icsv_op op, icsv_dtype t, int nranks, uint64_t bytes, icsv_counts *out)
{
    uint64_t elt = icsv_dtype_size(t), count = bytes / elt, per_rank = count / (uint64_t)nranks;
    switch (op) {
    case ICSV_OP_ALL_GATHER: /* each rank contributes count/n; receives all of them */
        *out = (icsv_counts){
            .count = per_rank, .send_count = per_rank, .recv_count = per_rank * nranks};
        break;
    case ICSV_OP_REDUCE_SCATTER: /* each rank sends n blocks, keeps one reduced block */
        *out = (icsv_counts){
            .count = per_rank, .send_count = per_rank * nranks, .recv_count = per_rank};
        break;
    case ICSV_OP_ALLTOALL: /* count/n elements to each peer */
        *out = (icsv_counts){
            .count = per_rank, .send_count = per_rank * nranks, .recv_count = per_rank * nranks};
        break;
    default:
        *out = (icsv_counts){.count = count, .send_count = count, .recv_count = count};
        break;
    }
    uint64_t most = out->send_count > out->recv_count ? out->send_count : out->recv_count;
    out->size_bytes = most * elt;
}

double icsv_busbw_factor(icsv_op op, int nranks)
{
    double n = nranks;
    switch (op) {
    case ICSV_OP_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case ICSV_OP_ALL_GATHER:
    case ICSV_OP_REDUCE_SCATTER:
    case ICSV_OP_ALLTOALL:
        return (n - 1) / n;
    default:
        return 1.0;
    }
}

void icsv_place_set_time(icsv_place *p, double time_us, uint64_t size_bytes, icsv_op op, int nranks)
{
    p->time_us = time_us;
    p->algbw_gbps = time_us > 0 ? (double)size_bytes / 1.0e9 / (time_us * 1.0e-6) : 0.0;
    p->busbw_gbps = p->algbw_gbps * icsv_busbw_factor(op, nranks);
}

double icsv_avg_busbw(const icsv_row *rows, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += rows[i].oop.busbw_gbps + rows[i].ip.busbw_gbps;
    return n ? sum / (2.0 * n) : 0.0;
}

int64_t icsv_total_wrong(const icsv_row *rows, size_t n)
{
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += rows[i].oop.wrong > 0 ? rows[i].oop.wrong : 0;
        sum += rows[i].ip.wrong > 0 ? rows[i].ip.wrong : 0;
    }
    return sum;
}
