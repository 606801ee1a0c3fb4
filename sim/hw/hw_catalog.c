/* The catalog sections of a hardware model: link standards and GPU, switch, NIC and CPU types.
 * An entry is either new (every required key present) or an override of an entry read before
 * (only the keys given change). Cross-entry checks (a switch's standard has the right family)
 * run after each section, so overrides cannot leave an inconsistent entry behind. */
#include "hw/hw_internal.h"

#include <math.h>
#include <string.h>

/* Line codes: name, data bits, total bits. 242b/256b is PCIe 6.0's FLIT (236 B of TLP and
 * 6 B of DLLP payload in a 256 B FLIT with CRC and FEC). */
static const struct {
    const char *name;
    int data, total;
} encodings[] = {
    {"none", 1, 1},          {"8b/10b", 8, 10},       {"64b/66b", 64, 66},
    {"128b/130b", 128, 130}, {"242b/256b", 242, 256}, {"256b/257b", 256, 257},
};

/* ---- small readers shared by all entries -------------------------------------------------- */

static void read_str(ics_hw__ld *ld, const cJSON *o, const char *key, bool req, const char **out)
{
    const char *s;
    if (ics_jr_str(ld->r, o, key, req, &s))
        *out = ics_hw__str(ld->hw, s);
}

static void read_int(ics_hw__ld *ld, const cJSON *o, const char *key, bool req, int64_t lo,
                     int64_t hi, int *out)
{
    int64_t v;
    if (ics_jr_int(ld->r, o, key, req, lo, hi, &v))
        *out = (int)v;
}

static void read_ns(ics_hw__ld *ld, const cJSON *o, const char *key, bool req, ics_time *out)
{
    double ns;
    if (ics_jr_num(ld->r, o, key, req, 0, 1e9, &ns))
        *out = ics_time_from_ns(ns);
}

/* GB/s (1e9 bytes) or TB/s in JSON -> bytes/s. */
static void read_rate(ics_hw__ld *ld, const cJSON *o, const char *key, bool req, double unit,
                      uint64_t *out)
{
    double v;
    if (ics_jr_num(ld->r, o, key, req, 1e-3, 1e6, &v))
        *out = (uint64_t)llround(v * unit);
}

/* "generation" may be written 4 or "NDR". */
static void read_generation(ics_hw__ld *ld, const cJSON *o, bool req, const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "generation");
    if (v && cJSON_IsNumber(v)) {
        char *s = g_strdup_printf("%g", v->valuedouble);
        *out = ics_hw__str(ld->hw, s);
        g_free(s);
        return;
    }
    read_str(ld, o, "generation", req, out);
}

static const ics_hw_standard *find_std(ics_hw__ld *ld, const char *name)
{
    return g_hash_table_lookup(ld->hw->standard_by_name, name);
}

const ics_hw_standard *ics_hw__ref_standard(ics_hw__ld *ld, const cJSON *obj, const char *key,
                                            bool required)
{
    const char *name;
    if (!ics_jr_str(ld->r, obj, key, required, &name))
        return NULL;
    const ics_hw_standard *s = find_std(ld, name);
    if (!s)
        ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(obj, key), key,
                    "expected the name of a link standard in the catalog, got \"%s\"", name);
    return s;
}

#define DEFINE_REF(fn, type, table, what)                                                          \
    const type *fn(ics_hw__ld *ld, const cJSON *obj, const char *key)                              \
    {                                                                                              \
        const char *name;                                                                          \
        if (!ics_jr_str(ld->r, obj, key, true, &name))                                             \
            return NULL;                                                                           \
        const type *t = g_hash_table_lookup(ld->hw->table, name);                                  \
        if (!t)                                                                                    \
            ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(obj, key), key,                    \
                        "expected the name of " what " in the catalog, got \"%s\"", name);         \
        return t;                                                                                  \
    }

DEFINE_REF(ics_hw__ref_gpu, ics_hw_gpu_type, gpu_by_name, "a GPU type")
DEFINE_REF(ics_hw__ref_switch, ics_hw_switch_type, switch_by_name, "a switch type")
DEFINE_REF(ics_hw__ref_nic, ics_hw_nic_type, nic_by_name, "a NIC type")
DEFINE_REF(ics_hw__ref_cpu, ics_hw_cpu_type, cpu_by_name, "a CPU type")

/* A reference that must be of one family (or of either of two). */
static void ref_family(ics_hw__ld *ld, const cJSON *o, const char *key, bool req,
                       ics_link_family f1, ics_link_family f2, const ics_hw_standard **out)
{
    if (!cJSON_GetObjectItemCaseSensitive(o, key) && !req)
        return;
    const ics_hw_standard *s = ics_hw__ref_standard(ld, o, key, req);
    if (!s)
        return;
    if (s->family != f1 && s->family != f2) {
        const char *want = ics_link_family_name(f1);
        ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(o, key), key,
                    "expected a standard of family %s%s%s, got \"%s\" (%s)", want,
                    f1 != f2 ? " or " : "", f1 != f2 ? ics_link_family_name(f2) : "", s->name,
                    ics_link_family_name(s->family));
        return;
    }
    *out = s;
}

/* ---- entries ------------------------------------------------------------------------------ */

static void read_standard(ics_hw__ld *ld, const cJSON *o, ics_hw_standard *s, bool fresh)
{
    static const char *const keys[] = {"family",
                                       "generation",
                                       "lanes",
                                       "lane_gbps",
                                       "encoding",
                                       "modulation",
                                       "max_payload_bytes",
                                       "packet_overhead_bytes",
                                       "latency_ns",
                                       "source",
                                       NULL};
    static const char *const modulations[] = {"NRZ", "PAM4", NULL};
    if (!ics_jr_keys(ld->r, o, keys))
        return;
    int fam;
    if (ics_jr_enum(ld->r, o, "family", fresh, ics_hw_family_names, &fam)) {
        /* Entries read before were checked against the family: an override cannot change it. */
        if (!fresh && fam != (int)s->family)
            ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(o, "family"), "family",
                        "expected \"%s\" (an override cannot change the family), got \"%s\"",
                        ics_hw_family_names[s->family], ics_hw_family_names[fam]);
        s->family = (ics_link_family)fam;
    }
    read_generation(ld, o, fresh, &s->generation);
    read_int(ld, o, "lanes", fresh, 1, 64, &s->lanes);
    ics_jr_num(ld->r, o, "lane_gbps", fresh, 0.001, 10000, &s->lane_gbps);
    const char *enc_names[G_N_ELEMENTS(encodings) + 1];
    for (size_t i = 0; i < G_N_ELEMENTS(encodings); i++)
        enc_names[i] = encodings[i].name;
    enc_names[G_N_ELEMENTS(encodings)] = NULL;
    int enc;
    if (ics_jr_enum(ld->r, o, "encoding", fresh, enc_names, &enc)) {
        s->encoding = encodings[enc].name;
        s->enc_data_bits = encodings[enc].data;
        s->enc_total_bits = encodings[enc].total;
    }
    int mod;
    if (ics_jr_enum(ld->r, o, "modulation", false, modulations, &mod))
        s->modulation = modulations[mod];
    read_int(ld, o, "max_payload_bytes", fresh, 1, 1 << 20, &s->max_payload_bytes);
    read_int(ld, o, "packet_overhead_bytes", fresh, 0, 4096, &s->packet_overhead_bytes);
    read_ns(ld, o, "latency_ns", fresh, &s->latency_ps);
    read_str(ld, o, "source", fresh, &s->source);
}

static void read_tflops(ics_hw__ld *ld, const cJSON *o, ics_hw_gpu_type *g, bool fresh)
{
    const cJSON *t = ics_jr_obj(ld->r, o, "tflops", fresh);
    if (!t)
        return;
    size_t mark = ics_jr_push_key(ld->r, "tflops");
    if (ics_jr_keys(ld->r, t, ics_dtype_names))
        for (int d = 0; d < ICS_DTYPE_COUNT; d++)
            ics_jr_num(ld->r, t, ics_dtype_names[d], false, 0, 1e6, &g->tflops[d]);
    ics_jr_pop(ld->r, mark);
}

/* microseconds in JSON -> ps */
static void read_us(ics_hw__ld *ld, const cJSON *o, const char *key, ics_time *out)
{
    double us;
    if (ics_jr_num(ld->r, o, key, false, 0, 1e6, &us))
        *out = (ics_time)llround(us * ICS_PS_PER_US);
}

/* The optional compute-model parameters (workload/compute.h); absent keys keep what the entry had
 * (the defaults for a new entry). */
static void read_compute(ics_hw__ld *ld, const cJSON *o, ics_hw_compute *c)
{
    static const char *const keys[] = {"gemm_efficiency",
                                       "gemm_efficiency_fp8",
                                       "gemm_tile_m",
                                       "gemm_tile_n",
                                       "gemm_wave_us",
                                       "gemm_stream_k",
                                       "attention_efficiency",
                                       "memory_efficiency",
                                       "launch_us",
                                       "sustained_fraction",
                                       "source",
                                       NULL};
    const cJSON *t = ics_jr_obj(ld->r, o, "compute", false);
    if (!t)
        return;
    size_t mark = ics_jr_push_key(ld->r, "compute");
    if (ics_jr_keys(ld->r, t, keys)) {
        ics_jr_num(ld->r, t, "gemm_efficiency", false, 0.001, 1, &c->gemm_eff);
        ics_jr_num(ld->r, t, "gemm_efficiency_fp8", false, 0.001, 1, &c->gemm_eff_fp8);
        read_int(ld, t, "gemm_tile_m", false, 1, 4096, &c->gemm_tile_m);
        read_int(ld, t, "gemm_tile_n", false, 1, 4096, &c->gemm_tile_n);
        read_us(ld, t, "gemm_wave_us", &c->gemm_wave_ps);
        ics_jr_bool(ld->r, t, "gemm_stream_k", false, &c->gemm_stream_k);
        ics_jr_num(ld->r, t, "attention_efficiency", false, 0.001, 1, &c->attn_eff);
        ics_jr_num(ld->r, t, "memory_efficiency", false, 0.001, 1, &c->mem_eff);
        read_us(ld, t, "launch_us", &c->launch_ps);
        ics_jr_num(ld->r, t, "sustained_fraction", false, 0.05, 1, &c->sustained);
        read_str(ld, t, "source", false, &c->source);
    }
    ics_jr_pop(ld->r, mark);
}

bool ics_hw__read_gpu_overlay(ics_hw__ld *ld, const cJSON *obj)
{
    static const char *const keys[] = {"compute", NULL};
    const cJSON *s = ics_jr_obj(ld->r, obj, "gpu_types", false);
    if (!s)
        return ics_jr_ok(ld->r);
    size_t mark = ics_jr_push_key(ld->r, "gpu_types");
    ics_jr_unique_keys(ld->r, s);
    for (const cJSON *e = s->child; e && ics_jr_ok(ld->r); e = e->next) {
        ics_hw_gpu_type *g = g_hash_table_lookup(ld->hw->gpu_by_name, e->string);
        if (!g) {
            ics_jr_fail(ld->r, e, e->string, "expected a GPU type of the base model, got \"%s\"",
                        e->string);
            break;
        }
        size_t m2 = ics_jr_push_key(ld->r, e->string);
        if (ics_jr_keys(ld->r, e, keys))
            read_compute(ld, e, &g->compute);
        ics_jr_pop(ld->r, m2);
    }
    ics_jr_pop(ld->r, mark);
    return ics_jr_ok(ld->r);
}

static void read_gpu(ics_hw__ld *ld, const cJSON *o, ics_hw_gpu_type *g, bool fresh)
{
    static const char *const keys[] = {
        "name",           "arch",    "nvlink",     "nvlinks",          "pcie",
        "pcie_lanes",     "tflops",  "hbm_gbytes", "hbm_tbytes_per_s", "p2p",
        "gpudirect_rdma", "compute", "sms",        "source",           NULL};
    if (!ics_jr_keys(ld->r, o, keys))
        return;
    read_str(ld, o, "name", fresh, &g->product);
    read_str(ld, o, "arch", fresh, &g->arch);
    ref_family(ld, o, "nvlink", false, ICS_LINK_NVLINK, ICS_LINK_NVLINK, &g->nvlink);
    read_int(ld, o, "nvlinks", fresh && g->nvlink, 0, 64, &g->nvlinks);
    ref_family(ld, o, "pcie", fresh, ICS_LINK_PCIE, ICS_LINK_NVLINK, &g->pcie);
    read_int(ld, o, "pcie_lanes", fresh, 1, 32, &g->pcie_lanes);
    read_tflops(ld, o, g, fresh);
    read_int(ld, o, "sms", false, 0, 100000, &g->sms);
    double gb;
    if (ics_jr_num(ld->r, o, "hbm_gbytes", fresh, 0.001, 1e6, &gb))
        g->hbm_bytes = (uint64_t)llround(gb * 1e9);
    read_rate(ld, o, "hbm_tbytes_per_s", fresh, 1e12, &g->hbm_bw_bytes_per_s);
    if (fresh)
        g->p2p = g->gdr = true;
    ics_jr_bool(ld->r, o, "p2p", false, &g->p2p);
    ics_jr_bool(ld->r, o, "gpudirect_rdma", false, &g->gdr);
    if (fresh) /* an override changing arch later keeps these: it overrides values, not defaults */
        ics_hw_compute_defaults_for(&g->compute, g->arch);
    read_compute(ld, o, &g->compute);
    read_str(ld, o, "source", fresh, &g->source);
    if (ics_jr_ok(ld->r) && g->nvlinks > 0 && !g->nvlink)
        ics_jr_fail(ld->r, o, "nvlink", "expected an NVLink standard for %d nvlinks, got nothing",
                    g->nvlinks);
}

static void read_switch(ics_hw__ld *ld, const cJSON *o, ics_hw_switch_type *t, bool fresh)
{
    static const char *const keys[] = {
        "kind",   "name", "ports", "standard", "latency_ns", "sharp", "reduce_gbytes_per_s",
        "source", NULL};
    /* the standard family each switch kind switches */
    static const ics_link_family fam[] = {ICS_LINK_NVLINK, ICS_LINK_PCIE, ICS_LINK_INFINIBAND,
                                          ICS_LINK_ETHERNET};
    if (!ics_jr_keys(ld->r, o, keys))
        return;
    int kind;
    if (ics_jr_enum(ld->r, o, "kind", fresh, ics_hw_switch_kind_names, &kind))
        t->kind = (ics_switch_kind)kind;
    read_str(ld, o, "name", fresh, &t->product);
    read_int(ld, o, "ports", fresh, 1, 100000, &t->ports);
    ref_family(ld, o, "standard", fresh, fam[t->kind], fam[t->kind], &t->standard);
    read_ns(ld, o, "latency_ns", fresh, &t->latency_ps);
    ics_jr_bool(ld->r, o, "sharp", false, &t->sharp);
    read_rate(ld, o, "reduce_gbytes_per_s", false, 1e9, &t->reduce_bw_bytes_per_s);
    read_str(ld, o, "source", fresh, &t->source);
    if (ics_jr_ok(ld->r) && t->standard && t->standard->family != fam[t->kind])
        ics_jr_fail(ld->r, o, "standard", "expected a standard of family %s for a %s, got \"%s\"",
                    ics_link_family_name(fam[t->kind]), ics_hw_switch_kind_names[t->kind],
                    t->standard->name);
    const cJSON *sharp = cJSON_GetObjectItemCaseSensitive(o, "sharp");
    if (ics_jr_ok(ld->r) && t->sharp &&
        (t->kind == ICS_SWITCH_PCIE || t->kind == ICS_SWITCH_ETHERNET))
        ics_jr_fail(ld->r, sharp ? sharp : o, "sharp",
                    "expected false for a %s (no in-network reduction), got true",
                    ics_hw_switch_kind_names[t->kind]);
}

static void read_nic(ics_hw__ld *ld, const cJSON *o, ics_hw_nic_type *n, bool fresh)
{
    static const char *const keys[] = {"name",       "standard",          "pcie",   "pcie_lanes",
                                       "latency_ns", "plugin_latency_us", "source", NULL};
    if (!ics_jr_keys(ld->r, o, keys))
        return;
    read_str(ld, o, "name", fresh, &n->product);
    ref_family(ld, o, "standard", fresh, ICS_LINK_INFINIBAND, ICS_LINK_ETHERNET, &n->standard);
    ref_family(ld, o, "pcie", fresh, ICS_LINK_PCIE, ICS_LINK_PCIE, &n->pcie);
    read_int(ld, o, "pcie_lanes", fresh, 1, 32, &n->pcie_lanes);
    read_ns(ld, o, "latency_ns", fresh, &n->latency_ps);
    read_us(ld, o, "plugin_latency_us", &n->plugin_latency_ps);
    read_str(ld, o, "source", fresh, &n->source);
}

static void read_cpu(ics_hw__ld *ld, const cJSON *o, ics_hw_cpu_type *c, bool fresh)
{
    static const char *const keys[] = {"name",
                                       "socket_link_gbytes_per_s",
                                       "socket_link_latency_ns",
                                       "p2p_gbytes_per_s",
                                       "memory_gbytes_per_s",
                                       "source",
                                       NULL};
    if (!ics_jr_keys(ld->r, o, keys))
        return;
    read_str(ld, o, "name", fresh, &c->product);
    read_rate(ld, o, "socket_link_gbytes_per_s", fresh, 1e9, &c->socket_link_bw_bytes_per_s);
    read_ns(ld, o, "socket_link_latency_ns", fresh, &c->socket_link_latency_ps);
    read_rate(ld, o, "p2p_gbytes_per_s", fresh, 1e9, &c->p2p_bw_bytes_per_s);
    read_rate(ld, o, "memory_gbytes_per_s", false, 1e9, &c->memory_bw_bytes_per_s);
    read_str(ld, o, "source", fresh, &c->source);
}

ics_cpu_vendor ics_hw_cpu_vendor(const ics_hw_cpu_type *c)
{
    const char *p = c && c->product ? c->product : "";
    if (strstr(p, "Intel"))
        return ICS_CPU_INTEL;
    if (strstr(p, "AMD"))
        return ICS_CPU_AMD;
    if (strstr(p, "Grace") || strstr(p, "Arm") || strstr(p, "ARM"))
        return ICS_CPU_ARM;
    return ICS_CPU_OTHER;
}

/* ---- sections ----------------------------------------------------------------------------- */

typedef void (*entry_reader)(ics_hw__ld *ld, const cJSON *o, void *entry, bool fresh);

typedef struct {
    const char *key;
    const char *override_key; /* in node and cluster files, where "gpus" and "cpus" are taken */
    size_t size;
    entry_reader read;
    size_t list_off, map_off; /* offsets of the GPtrArray* / GHashTable* in ics_hw */
} section_def;

#define SECTION(k, ok, type, fn, list, map)                                                        \
    {                                                                                              \
        .key = k, .override_key = ok, .size = sizeof(type), .read = (entry_reader)fn,              \
        .list_off = offsetof(ics_hw, list), .map_off = offsetof(ics_hw, map)                       \
    }

/* Order matters: standards first, since every other entry refers to them. */
static const section_def sections[] = {
    SECTION("standards", "standards", ics_hw_standard, read_standard, standards, standard_by_name),
    SECTION("cpus", "cpu_types", ics_hw_cpu_type, read_cpu, cpu_types, cpu_by_name),
    SECTION("nics", "nics", ics_hw_nic_type, read_nic, nic_types, nic_by_name),
    SECTION("switches", "switches", ics_hw_switch_type, read_switch, switch_types, switch_by_name),
    SECTION("gpus", "gpu_types", ics_hw_gpu_type, read_gpu, gpu_types, gpu_by_name),
};

static bool read_section(ics_hw__ld *ld, const cJSON *obj, const section_def *sec, const char *key)
{
    const cJSON *s = ics_jr_obj(ld->r, obj, key, false);
    if (!s)
        return ics_jr_ok(ld->r);
    size_t m1 = ics_jr_push_key(ld->r, key);
    ics_jr_unique_keys(ld->r, s);
    ics_jr_pop(ld->r, m1);
    GPtrArray *list = *(GPtrArray **)((char *)ld->hw + sec->list_off);
    GHashTable *map = *(GHashTable **)((char *)ld->hw + sec->map_off);
    size_t mark = ics_jr_push_key(ld->r, key);
    for (const cJSON *e = s->child; e && ics_jr_ok(ld->r); e = e->next) {
        size_t m2 = ics_jr_push_key(ld->r, e->string);
        void *entry = g_hash_table_lookup(map, e->string);
        bool fresh = entry == NULL;
        if (fresh) {
            entry = g_malloc0(sec->size);
            *(const char **)entry = ics_hw__str(ld->hw, e->string); /* name is first */
            g_ptr_array_add(list, entry);
            g_hash_table_insert(map, (gpointer) * (const char **)entry, entry);
        }
        sec->read(ld, e, entry, fresh);
        ics_jr_pop(ld->r, m2);
    }
    ics_jr_pop(ld->r, mark);
    return ics_jr_ok(ld->r);
}

bool ics_hw__read_catalog_sections(ics_hw__ld *ld, const cJSON *obj, bool catalog_file)
{
    for (size_t i = 0; i < G_N_ELEMENTS(sections); i++) {
        const char *key = catalog_file ? sections[i].key : sections[i].override_key;
        if (!read_section(ld, obj, &sections[i], key))
            return false;
    }
    return true;
}
