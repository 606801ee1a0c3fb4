/* The tuning NCCL's environment variables ask for (comm.h: ics_coll_tuning_from_env), read as
 * NCCL reads them: lists and negations for NCCL_ALGO and NCCL_PROTO (src/graph/tuning.cc,
 * parseList), integers for the rest; what NCCL would warn about is a warning here too. */
#include "collectives/comm.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* A set of names of `count` members (lookup: name -> member or -1), parseList's way. */
static unsigned parse_set(const char *list, int count, int (*lookup)(const char *), char **bad)
{
    *bad = NULL;
    bool negate = *list == '^';
    unsigned all = (1u << count) - 1, named = 0;
    char **words = g_strsplit(list + negate, ",", -1);
    for (int i = 0; words[i]; i++) {
        if (!*words[i]) /* strtok skips empty fields: "Ring,,Tree" */
            continue;
        int x = lookup(words[i]);
        if (x >= 0)
            named |= ICS_COLL_SET(x);
        else if (!*bad)
            *bad = g_strdup(words[i]);
    }
    g_strfreev(words);
    return negate ? all & ~named : named;
}

unsigned ics_coll_algos_parse(const char *list, char **bad)
{
    return parse_set(list, ICS_ALGO_COUNT, ics_coll_algo_from_name, bad);
}

unsigned ics_coll_protos_parse(const char *list, char **bad)
{
    return parse_set(list, ICS_PROTO_COUNT, ics_coll_proto_from_name, bad);
}

/* Appends one warning to those so far. */
static void note(GString *w, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void note(GString *w, const char *fmt, ...)
{
    if (w->len)
        g_string_append(w, "; ");
    va_list ap;
    va_start(ap, fmt);
    g_string_append_vprintf(w, fmt, ap);
    va_end(ap);
}

/* NCCL_ALGO or NCCL_PROTO into *set: an empty result (nothing understood, or everything
 * excluded, which NCCL would fail every call on) is ignored as a whole. */
static void read_set(ics_env_lookup get, void *ctx, GString *w, const char *var,
                     unsigned (*parse)(const char *, char **), unsigned *set)
{
    const char *v = get(var, ctx);
    if (!v || !*v)
        return;
    char *bad = NULL;
    unsigned s = parse(v, &bad);
    char *shown = g_strescape(v, NULL), *bad_shown = bad ? g_strescape(bad, NULL) : NULL;
    if (!s && bad)
        note(w, "%s=%s not understood, ignored", var, shown);
    else if (!s)
        note(w, "%s=%s leaves nothing to choose from, ignored", var, shown);
    else if (bad)
        note(w, "%s=%s: %s not understood, ignored", var, shown, bad_shown);
    if (s)
        *set = s;
    g_free(shown);
    g_free(bad_shown);
    g_free(bad);
}

const char *ics_coll_env_conf(const char *name, void *hw)
{
    return ics_hw_nccl_conf(hw, name);
}

const char *ics_coll_env_stacked(const char *name, void *stack)
{
    const ics_coll_env_stack *s = stack;
    const char *v = s->get ? s->get(name, s->ctx) : g_getenv(name);
    return v ? v : ics_hw_nccl_conf(s->hw, name);
}

/* An integer variable in lo..hi into *out; anything else is warned about and ignored. */
static void read_int_from(ics_env_lookup get, void *ctx, GString *w, const char *var, int lo,
                          int hi, int *out)
{
    const char *v = get(var, ctx);
    if (!v || !*v)
        return;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        char *shown = g_strescape(v, NULL);
        note(w, "%s=%s not understood (expected an integer in %d..%d), ignored", var, shown, lo,
             hi);
        g_free(shown);
        return;
    }
    *out = (int)x;
}

/* A path level as ncclGetLevel reads NCCL_P2P_LEVEL and NCCL_NET_GDR_LEVEL: a path type's name,
 * or the numbers of NCCL before 2.5 (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and up SYS). NCCL's types
 * that icsim's nodes do not distinguish read as their neighbours: NVB as NVL, PXN as PXB, C2C
 * and P2C as PHB. */
static void read_level(ics_env_lookup get, void *ctx, GString *w, const char *var, int *out)
{
    const char *v = get(var, ctx);
    if (!v || !*v)
        return;
    static const struct {
        const char *name;
        ics_path_type type;
    } aliases[] = {
        {"NVB", ICS_PATH_NVL}, {"PXN", ICS_PATH_PXB}, {"C2C", ICS_PATH_PHB}, {"P2C", ICS_PATH_PHB}};
    int l = ics_path_type_from_name(v);
    for (size_t i = 0; l < 0 && i < G_N_ELEMENTS(aliases); i++)
        if (g_ascii_strcasecmp(v, aliases[i].name) == 0)
            l = aliases[i].type;
    if (l < 0 && g_ascii_isdigit(v[0])) {
        static const ics_path_type old[] = {ICS_PATH_LOC, ICS_PATH_PIX, ICS_PATH_PXB, ICS_PATH_PHB,
                                            ICS_PATH_SYS};
        char *end = NULL;
        long long x = g_ascii_strtoll(v, &end, 10);
        if (end && !*end)
            l = old[MIN(x, 4)];
    }
    if (l < 0) {
        char *shown = g_strescape(v, NULL);
        note(w, "%s=%s not understood (expected LOC, NVL, PIX, PXB, PHB or SYS), ignored", var,
             shown);
        g_free(shown);
        return;
    }
    *out = l;
}

void ics_coll_paths_from(ics_topo_paths *p, ics_env_lookup get, void *ctx, GError **warning)
{
    *p = (ics_topo_paths){-1, -1, -1, 0, 0, ""};
    GString *w = g_string_new(NULL);
    int disable = 0;
    read_int_from(get, ctx, w, "NCCL_P2P_DISABLE", INT_MIN, INT_MAX, &disable);
    if (disable == 1) /* ncclGetLevel: the disable variable wins over the level */
        p->p2p_level = ICS_PATH_LOC;
    else
        read_level(get, ctx, w, "NCCL_P2P_LEVEL", &p->p2p_level);
    read_level(get, ctx, w, "NCCL_NET_GDR_LEVEL", &p->gdr_level);
    int read = -1;
    read_int_from(get, ctx, w, "NCCL_NET_GDR_READ", INT_MIN, INT_MAX, &read);
    p->gdr_read = read < 0 ? -1 : read != 0;
    /* net_ib.cc: at most NCCL_IB_MAX_QPS (128) a connection */
    read_int_from(get, ctx, w, "NCCL_IB_QPS_PER_CONNECTION", 1, 128, &p->qps);
    /* paths.cc ncclPxnDisable: PXN is off only where the value is 1 */
    read_int_from(get, ctx, w, "NCCL_PXN_DISABLE", INT_MIN, INT_MAX, &p->pxn_disable);
    /* net_ib.cc: the NICs NCCL's IB transport opens (matched in topo_hca.c) */
    const char *hca = get("NCCL_IB_HCA", ctx);
    if (hca && strlen(hca) >= sizeof p->ib_hca)
        note(w, "NCCL_IB_HCA: longer than %zu characters, ignored", sizeof p->ib_hca - 1);
    else if (hca)
        g_strlcpy(p->ib_hca, hca, sizeof p->ib_hca);
    if (w->len)
        g_set_error_literal(warning, ICS_ERROR, ICS_ERROR_INPUT, w->str);
    g_string_free(w, TRUE);
}

void ics_coll_paths_from_env(ics_topo_paths *p, const ics_hw *hw, GError **warning)
{
    ics_coll_env_stack s = {.hw = hw};
    ics_coll_paths_from(p, ics_coll_env_stacked, &s, warning);
}

/* Settings that change what NCCL does in ways icsim does not model, warned about rather than
 * dropped in silence. NCCL_IB_DISABLE=1 or NCCL_NET=Socket makes NCCL move data across nodes by
 * its socket transport (net_socket.cc: TCP from host memory, no GPUDirect RDMA, its own helper
 * threads and sockets a connection), whose rates depend on the host's TCP stack, not on the
 * NIC's datasheet; NCCL_SHM_DISABLE=1 sends a node's GPUs without peer access to each other
 * through the network (loopback) instead of host memory. Either way the figures stay those of
 * the transport icsim models, and the user is told so. NCCL_NTHREADS and NCCL_LL128_NTHREADS set
 * a CTA's threads (enqueue.cc), which icsim holds at NCCL's defaults: what a CTA copies and the
 * bytes below which a small call drops channels (channels.c) are those defaults'. */
static void note_unmodelled(ics_env_lookup get, void *ctx, GString *w)
{
    const char *net = get("NCCL_NET", ctx);
    int ib_off = 0, shm_off = 0;
    read_int_from(get, ctx, w, "NCCL_IB_DISABLE", INT_MIN, INT_MAX, &ib_off);
    read_int_from(get, ctx, w, "NCCL_SHM_DISABLE", INT_MIN, INT_MAX, &shm_off);
    if (net && g_ascii_strcasecmp(net, "Socket") == 0)
        note(w,
             "NCCL_NET=%s: NCCL's socket transport is not modelled; across nodes the figures "
             "are those of the system's own network transport",
             net);
    else if (ib_off == 1)
        note(w, "NCCL_IB_DISABLE=1: NCCL's socket transport, which NCCL then uses across nodes, "
                "is not modelled; the figures are those of the system's own network transport");
    if (shm_off == 1)
        note(w, "NCCL_SHM_DISABLE=1: not modelled; GPUs without peer access still exchange "
                "data through host memory");
    /* NCCL_CROSS_NIC (graph/search.cc): 0 keeps each ring and tree channel on one NIC index on
     * every node, 2 (the default) tries that first and finds it on nodes whose NICs are alike;
     * 1 lets a channel leave a node by another NIC than it entered by, which icsim's graphs
     * never do (ring_order.c: a ring leaves a node by the NIC it entered by; tree.c
     * chain_start: tree channel p's chain starts at the GPU of the node's NIC p) */
    int cross = 2;
    read_int_from(get, ctx, w, "NCCL_CROSS_NIC", 0, 2, &cross);
    if (cross == 1)
        note(w, "NCCL_CROSS_NIC=1: not modelled; each channel keeps one NIC index on every node, "
                "as NCCL does with 0 and, on nodes whose NICs are alike, with the default 2");
    static const char *const threads[] = {"NCCL_NTHREADS", "NCCL_LL128_NTHREADS"};
    for (size_t i = 0; i < G_N_ELEMENTS(threads); i++) {
        const char *v = get(threads[i], ctx);
        if (v && *v) {
            char *shown = g_strescape(v, NULL);
            note(w,
                 "%s=%s: not modelled; a channel's CTA runs NCCL's default threads (what it "
                 "copies, and when a small call drops channels, follow from them)",
                 threads[i], shown);
            g_free(shown);
        }
    }
}

void ics_coll_tuning_from(ics_coll_tuning *t, ics_env_lookup get, void *ctx, GError **warning)
{
    *t = (ics_coll_tuning){.nvls_enable = true};
    GString *w = g_string_new(NULL);
    read_set(get, ctx, w, "NCCL_ALGO", ics_coll_algos_parse, &t->algos);
    read_set(get, ctx, w, "NCCL_PROTO", ics_coll_protos_parse, &t->protos);
    int nvls = 1, collnet = 0;
    read_int_from(get, ctx, w, "NCCL_NVLS_ENABLE", INT_MIN, INT_MAX, &nvls);
    read_int_from(get, ctx, w, "NCCL_COLLNET_ENABLE", INT_MIN, INT_MAX, &collnet);
    t->nvls_enable = nvls != 0;
    t->collnet_enable = collnet != 0;
    /* NCCL's channel counts are at most 64 (MAXCHANNELS); larger values are clamped there */
    read_int_from(get, ctx, w, "NCCL_MIN_NCHANNELS", 0, INT_MAX, &t->min_channels);
    read_int_from(get, ctx, w, "NCCL_MAX_NCHANNELS", 0, INT_MAX, &t->max_channels);
    /* NCCL 2.17's bounds on every kind of channel (ncclConfig_t minCTAs / maxCTAs): for rings
     * and trees NCCL keeps the larger minimum and the smaller maximum of the two kinds
     * (graph/connect.cc, ncclTopoPostset); its NVLS channels see these alone (nvls.cc) */
    read_int_from(get, ctx, w, "NCCL_MIN_CTAS", 1, INT_MAX, &t->min_ctas);
    read_int_from(get, ctx, w, "NCCL_MAX_CTAS", 1, INT_MAX, &t->max_ctas);
    t->min_channels = MAX(t->min_channels, t->min_ctas);
    if (t->max_ctas > 0)
        t->max_channels = t->max_channels > 0 ? MIN(t->max_channels, t->max_ctas) : t->max_ctas;
    read_int_from(get, ctx, w, "NCCL_NVLS_NCHANNELS", 1, INT_MAX, &t->nvls_channels);
    /* NVLS chunks (transport/nvls.cc nvlsChunkSize, enqueue.cc calcCollChunking) */
    read_int_from(get, ctx, w, "NCCL_NVLS_CHUNKSIZE", 1, INT_MAX, &t->nvls_chunk);
    read_int_from(get, ctx, w, "NCCL_NVLSTREE_MAX_CHUNKSIZE", 1, INT_MAX, &t->nvlstree_max_chunk);
    /* point-to-point step sizes (init.cc computeBuffSizes); NCCL_STEPS = 8 steps a buffer */
    read_int_from(get, ctx, w, "NCCL_P2P_NET_CHUNKSIZE", 1, INT_MAX, &t->p2p_net_chunk);
    read_int_from(get, ctx, w, "NCCL_P2P_NVL_CHUNKSIZE", 1, INT_MAX, &t->p2p_nvl_chunk);
    read_int_from(get, ctx, w, "NCCL_P2P_PCI_CHUNKSIZE", 1, INT_MAX, &t->p2p_pci_chunk);
    read_int_from(get, ctx, w, "NCCL_BUFFSIZE", 8, INT_MAX, &t->buffsize);
    /* channels per peer across the network (paths.cc, 2.29+): MAXCHANNELS at most */
    read_int_from(get, ctx, w, "NCCL_NCHANNELS_PER_NET_PEER", 1, 64, &t->net_peer_channels);
    read_int_from(get, ctx, w, "NCCL_P2P_PER_CHANNEL_NET_BW", 1, INT_MAX, &t->p2p_channel_net_gbps);
    /* NCCL takes its gcd with every node's GPU count (init.cc): any positive size is valid */
    read_int_from(get, ctx, w, "NCCL_P2P_SCHEDULE_GROUP_SIZE", 1, 4096, &t->p2p_group);
    note_unmodelled(get, ctx, w);
    if (w->len)
        g_set_error_literal(warning, ICS_ERROR, ICS_ERROR_INPUT, w->str);
    g_string_free(w, TRUE);
}

/* Every NCCL variable icsim reads (this file; a few are read only to be warned about), and
 * those that do not change a collective's time (logging, bootstrap, the RoCE GID, IB
 * timeouts and retries, dump files). Any other NCCL_* variable set in the environment or by
 * the system's nccl_conf is named in a warning, not ignored in silence: NCCL_IB_TC,
 * NCCL_IB_SL, NCCL_TUNER_PLUGIN, NCCL_TOPO_FILE, a plugin's own ... change what NCCL does in
 * ways icsim does not follow. Sorted (strcmp), for bsearch. */
static const char *const known_vars[] = {
    "NCCL_ALGO",
    "NCCL_BUFFSIZE",
    "NCCL_COLLNET_ENABLE",
    "NCCL_COMM_ID",
    "NCCL_CROSS_NIC",
    "NCCL_DEBUG",
    "NCCL_DEBUG_FILE",
    "NCCL_DEBUG_SUBSYS",
    "NCCL_DEBUG_TIMESTAMP_FORMAT",
    "NCCL_GRAPH_DUMP_FILE",
    "NCCL_HOSTID",
    "NCCL_IB_DISABLE",
    "NCCL_IB_GID_INDEX",
    "NCCL_IB_HCA",
    "NCCL_IB_QPS_PER_CONNECTION",
    "NCCL_IB_RETRY_CNT",
    "NCCL_IB_ROCE_VERSION_NUM",
    "NCCL_IB_TIMEOUT",
    "NCCL_LL128_NTHREADS",
    "NCCL_MAX_CTAS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_MIN_CTAS",
    "NCCL_MIN_NCHANNELS",
    "NCCL_NCHANNELS_PER_NET_PEER",
    "NCCL_NET",
    "NCCL_NET_GDR_LEVEL",
    "NCCL_NET_GDR_READ",
    "NCCL_NTHREADS",
    "NCCL_NVLSTREE_MAX_CHUNKSIZE",
    "NCCL_NVLS_CHUNKSIZE",
    "NCCL_NVLS_ENABLE",
    "NCCL_NVLS_NCHANNELS",
    "NCCL_P2P_DISABLE",
    "NCCL_P2P_LEVEL",
    "NCCL_P2P_NET_CHUNKSIZE",
    "NCCL_P2P_NVL_CHUNKSIZE",
    "NCCL_P2P_PCI_CHUNKSIZE",
    "NCCL_P2P_PER_CHANNEL_NET_BW",
    "NCCL_P2P_SCHEDULE_GROUP_SIZE",
    "NCCL_PROTO",
    "NCCL_PXN_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_SOCKET_FAMILY",
    "NCCL_SOCKET_IFNAME",
    "NCCL_TOPO_DUMP_FILE",
};

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool ics_coll_env_known(const char *name)
{
    return bsearch(&name, known_vars, G_N_ELEMENTS(known_vars), sizeof known_vars[0], by_name);
}

/* Names the NCCL_* variables of the process's environment and of hw's nccl_conf that icsim
 * neither reads nor knows to be without effect, each once, in name order. */
static void note_unread(const ics_hw *hw, GString *w)
{
    GPtrArray *names = g_ptr_array_new();
    char **env = g_listenv();
    for (int i = 0; env[i]; i++)
        if (g_str_has_prefix(env[i], "NCCL_"))
            g_ptr_array_add(names, env[i]);
    const char **conf = hw ? ics_hw_nccl_conf_names(hw) : g_new0(const char *, 1);
    for (int i = 0; conf[i]; i++)
        if (!g_getenv(conf[i])) /* the environment's value wins: already listed */
            g_ptr_array_add(names, (char *)conf[i]);
    g_ptr_array_sort(names, by_name);
    GString *list = g_string_new(NULL);
    for (guint i = 0; i < names->len; i++) {
        const char *n = g_ptr_array_index(names, i);
        if (ics_coll_env_known(n) || (i > 0 && strcmp(n, g_ptr_array_index(names, i - 1)) == 0))
            continue;
        const char *v = g_getenv(n);
        char *shown = g_strescape(v ? v : ics_hw_nccl_conf(hw, n), NULL);
        g_string_append_printf(list, "%s%s=%s%s", list->len ? ", " : "", n, shown,
                               v ? "" : " (nccl_conf)");
        g_free(shown);
    }
    if (list->len)
        note(w, "not modelled, ignored: %s", list->str);
    g_string_free(list, TRUE);
    g_free(conf);
    g_strfreev(env);
    g_ptr_array_free(names, TRUE);
}

void ics_coll_tuning_from_env(ics_coll_tuning *t, const ics_hw *hw, GError **warning)
{
    ics_coll_env_stack s = {.hw = hw};
    GError *read = NULL;
    ics_coll_tuning_from(t, ics_coll_env_stacked, &s, &read);
    GString *w = g_string_new(read ? read->message : NULL);
    note_unread(hw, w);
    if (w->len)
        g_set_error_literal(warning, ICS_ERROR, ICS_ERROR_INPUT, w->str);
    g_string_free(w, TRUE);
    g_clear_error(&read);
}
