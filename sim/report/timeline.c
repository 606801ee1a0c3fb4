/* The Chrome/Perfetto timeline writer (report.h: ics_timeline_write). Streams the events to a
 * temporary file in the target's directory, then renames it: a timeline of millions of ops never
 * sits in memory twice and a failed write leaves nothing behind. */
#include "core/json.h"
#include "report/report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#define LINKS_PID 1000000 /* the links process, after any rank */

/* Microseconds with three decimals, from integer picoseconds (exact, no floating point). */
static void put_us(FILE *f, ics_time ps)
{
    ics_time ns = ps / ICS_PS_PER_NS;
    fprintf(f, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
}

static const char *op_label(const ics_trace_op *op)
{
    if (op->name && *op->name)
        return op->name;
    switch (op->kind) {
    case ICS_TOP_COLL:
        return ics_coll_op_name(op->coll.op);
    case ICS_TOP_SEND:
        return "send";
    case ICS_TOP_RECV:
        return "recv";
    default:
        return "compute";
    }
}

static void put_meta(FILE *f, const char *what, int pid, int tid, const char *name, bool *first)
{
    fprintf(f, "%s\n{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
            *first ? "" : ",", what, pid, tid);
    ics_json_write_string(f, name);
    fputs("}}", f);
    *first = false;
}

static void put_ranks(FILE *f, const ics_replay *r, const ics_trace *tr, const ics_topo *t,
                      int nranks, bool *first)
{
    for (int k = 0; k < nranks; k++) {
        (void)t;
        char *pname = g_strdup_printf("rank %d", k);
        put_meta(f, "process_name", k, 0, pname, first);
        g_free(pname);
        for (int s = 0; s < ics_trace_nstreams(tr, k); s++)
            put_meta(f, "thread_name", k, s, ics_trace_stream_name(tr, k, s), first);
    }
    size_t n;
    const ics_replay_span *sp = ics_replay_spans(r, &n);
    for (size_t i = 0; i < n; i++) {
        if (sp[i].rank >= nranks)
            continue;
        const ics_trace_op *op = ics_trace_get_op(tr, sp[i].rank, sp[i].op);
        fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":", sp[i].rank, op->stream);
        put_us(f, sp[i].start);
        fputs(",\"dur\":", f);
        put_us(f, sp[i].end - sp[i].start);
        fputs(",\"name\":", f);
        ics_json_write_string(f, op_label(op));
        fprintf(f,
                ",\"cat\":\"%s\",\"args\":{\"op\":%d,\"issued_us\":", ics_trace_cat_name(op->cat),
                sp[i].op);
        put_us(f, sp[i].ready);
        fputs("}}", f);
    }
}

/* A channel's name: "node0:gpu3 -> node0:nvswitch1". */
static char *chan_label(const ics_topo *t, int c)
{
    const ics_topo_chan *ch = ics_topo_chan_get(t, c);
    return g_strdup_printf("%s -> %s", ics_topo_dev_label(t, ch->src),
                           ics_topo_dev_label(t, ch->dst));
}

static void put_rate(FILE *f, const char *label, ics_time at, double gbps)
{
    fprintf(f, ",\n{\"ph\":\"C\",\"pid\":%d,\"name\":", LINKS_PID);
    ics_json_write_string(f, label);
    fputs(",\"ts\":", f);
    put_us(f, at);
    fprintf(f, ",\"args\":{\"GB/s\":%.3f}}", gbps);
}

/* Counter events per channel. The backends count a channel's bytes when they have crossed it,
 * a packet train (up to 4 MiB) at a time, so a sample can see a lump that took longer than the
 * interval to move. Each lump is drawn over the window it must have taken: at least the
 * interval, at least bytes / channel rate, never before the channel's previous entry. */
static void put_chan(FILE *f, const ics_topo *t, int c, const ics_replay_link_sample *s,
                     const int *idx, int n, ics_time iv)
{
    char *label = chan_label(t, c);
    double bw = (double)ics_topo_chan_get(t, c)->bw_bytes_per_s;
    uint64_t prev = 0;
    ics_time prev_at = 0;
    for (int i = 0; i < n; i++) {
        const ics_replay_link_sample *x = &s[idx[i]];
        uint64_t bytes = x->cum - prev;
        ics_time at = x->round * iv;
        ics_time need = bw > 0 ? (ics_time)((double)bytes / bw * ICS_PS_PER_S) : iv;
        ics_time from = MAX(prev_at, at - MAX(iv, need));
        put_rate(f, label, from, (double)bytes / ics_time_to_s(at - from) / 1e9);
        bool joined = i + 1 < n && s[idx[i + 1]].round == x->round + 1;
        if (!joined)
            put_rate(f, label, at, 0);
        prev = x->cum;
        prev_at = at;
    }
    g_free(label);
}

static void put_links(FILE *f, const ics_replay *r, const ics_topo *t, bool *first)
{
    size_t n;
    ics_time iv;
    const ics_replay_link_sample *s = ics_replay_link_samples(r, &n, &iv);
    if (n == 0)
        return;
    put_meta(f, "process_name", LINKS_PID, 0, "links", first);
    /* group the entries by channel, in round order (a stable counting sort) */
    int nch = ics_topo_nchans(t);
    int *start = g_new0(int, nch + 1), *idx = g_new(int, n);
    for (size_t i = 0; i < n; i++)
        start[s[i].chan + 1]++;
    for (int c = 0; c < nch; c++)
        start[c + 1] += start[c];
    int *fill = g_memdup2(start, sizeof(int) * (size_t)(nch + 1));
    for (size_t i = 0; i < n; i++)
        idx[fill[s[i].chan]++] = (int)i;
    for (int c = 0; c < nch; c++)
        if (start[c + 1] > start[c])
            put_chan(f, t, c, s, idx + start[c], start[c + 1] - start[c], iv);
    g_free(fill);
    g_free(start);
    g_free(idx);
}

bool ics_timeline_write(const ics_replay *r, const ics_trace *tr, const ics_topo *t,
                        const char *path, int max_ranks, GError **error)
{
    char *dir = g_path_get_dirname(path);
    char *tmpl = g_build_filename(dir, ".icsim-timeline-XXXXXX", NULL);
    g_free(dir);
    int fd = g_mkstemp(tmpl);
    if (fd >= 0)
        fchmod(fd, 0644); /* mkstemp's 0600 is for secrets: this is a result to share */
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: cannot write: %s", path,
                    g_strerror(errno));
        if (fd >= 0)
            close(fd);
        g_free(tmpl);
        return false;
    }
    int nranks = ics_trace_nranks(tr);
    if (max_ranks > 0 && max_ranks < nranks)
        nranks = max_ranks;
    bool first = true;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
    put_ranks(f, r, tr, t, nranks, &first);
    put_links(f, r, t, &first);
    fputs("\n]}\n", f);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (ok && g_rename(tmpl, path) != 0)
        ok = false;
    if (!ok) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: cannot write: %s", path,
                    g_strerror(errno));
        g_unlink(tmpl);
    }
    g_free(tmpl);
    return ok;
}
