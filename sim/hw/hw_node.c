/* Reading one node: its GPUs, CPU sockets and NUMA nodes, the PCIe tree and the NVLink wiring.
 * Impossible wiring (more links than a GPU or switch has, dangling or later-listed parents,
 * GPUs missing from the tree) is rejected here, with the location of the offending value, so
 * that topology building never meets it. */
#include "hw/hw_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const pcie_kind_names[] = {"host_bridge", "switch", "gpu", "nic", NULL};
static const char *const role_names[] = {"compute", "storage", NULL};

typedef struct {
    ics_hw__ld *ld;
    ics_hw_node *node;
    GArray *cpus, *pcie, *nvswitches, *nvbonds;
    GHashTable *pcie_by_name; /* name -> index + 1 */
    GHashTable *numa_ids;     /* NUMA id -> 1 */
    GHashTable *nvsw_by_name; /* NVSwitch name -> index + 1 */
    GHashTable *bonds;        /* (lower endpoint, higher endpoint) as a gint64 key -> 1 */
} node_rd;

static ics_jr *R(node_rd *nr)
{
    return nr->ld->r;
}

/* ---- CPUs --------------------------------------------------------------------------------- */

static void read_numa_list(node_rd *nr, const cJSON *c, int position, ics_hw_cpu *cpu)
{
    const cJSON *arr = ics_jr_arr(R(nr), c, "numa_nodes", false);
    GArray *ids = g_array_new(FALSE, FALSE, sizeof(int));
    if (!arr) {
        g_array_append_val(ids, position);
    } else {
        size_t mark = ics_jr_push_key(R(nr), "numa_nodes");
        int i = 0;
        for (const cJSON *e = arr->child; e && ics_jr_ok(R(nr)); e = e->next, i++) {
            double d = cJSON_IsNumber(e) ? e->valuedouble : -1;
            bool valid = d >= 0 && d <= 4095 && d == (int)d; /* range first: no UB in the cast */
            int id = valid ? (int)d : -1;
            size_t m2 = ics_jr_push_index(R(nr), i);
            if (!valid) {
                char *got = ics_json_describe(e);
                ics_jr_fail(R(nr), e, NULL, "expected a NUMA id in 0..4095, got %s", got);
                g_free(got);
            } else if (g_hash_table_contains(nr->numa_ids, GINT_TO_POINTER(id))) {
                ics_jr_fail(R(nr), e, NULL, "expected NUMA ids unique in the node, got %d twice",
                            id);
            }
            g_hash_table_add(nr->numa_ids, GINT_TO_POINTER(id));
            ics_jr_pop(R(nr), m2);
            g_array_append_val(ids, id);
        }
        if (ics_jr_ok(R(nr)) && ids->len == 0)
            ics_jr_fail(R(nr), arr, NULL, "expected at least one NUMA id, got an empty array");
        ics_jr_pop(R(nr), mark);
    }
    if (!arr) {
        if (g_hash_table_contains(nr->numa_ids, GINT_TO_POINTER(position)))
            ics_jr_fail(R(nr), c, NULL,
                        "expected NUMA ids unique in the node, got %d twice (the default id of "
                        "socket %d; give \"numa_nodes\")",
                        position, position);
        g_hash_table_add(nr->numa_ids, GINT_TO_POINTER(position));
    }
    cpu->n_numa = (int)ids->len;
    cpu->numa = (const int *)g_array_free(ids, FALSE);
}

static void read_cpus(node_rd *nr, const cJSON *obj)
{
    static const char *const keys[] = {"name", "type", "numa_nodes", NULL};
    const cJSON *arr = ics_jr_arr(R(nr), obj, "cpus", false);
    if (!arr)
        return;
    size_t mark = ics_jr_push_key(R(nr), "cpus");
    int i = 0;
    for (const cJSON *c = arr->child; c && ics_jr_ok(R(nr)); c = c->next, i++) {
        size_t m2 = ics_jr_push_index(R(nr), i);
        ics_hw_cpu cpu = {0};
        const char *name = NULL;
        if (ics_jr_keys(R(nr), c, keys) && ics_jr_str(R(nr), c, "name", true, &name)) {
            cpu.name = ics_hw__str(nr->ld->hw, name);
            cpu.type = ics_hw__ref_cpu(nr->ld, c, "type");
        }
        if (ics_jr_ok(R(nr)))
            read_numa_list(nr, c, i, &cpu);
        g_array_append_val(nr->cpus, cpu);
        ics_jr_pop(R(nr), m2);
    }
    ics_jr_pop(R(nr), mark);
}

/* ---- the PCIe tree ------------------------------------------------------------------------ */

static int pcie_index(node_rd *nr, const char *name)
{
    return GPOINTER_TO_INT(g_hash_table_lookup(nr->pcie_by_name, name)) - 1;
}

static ics_hw_pcie *pcie_at(node_rd *nr, int i)
{
    return &g_array_index(nr->pcie, ics_hw_pcie, i);
}

static void read_parent(node_rd *nr, const cJSON *e, ics_hw_pcie *p)
{
    const char *parent;
    if (!ics_jr_str(R(nr), e, "parent", true, &parent))
        return;
    int pi = pcie_index(nr, parent);
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(e, "parent");
    if (pi < 0) {
        ics_jr_fail(R(nr), at, "parent",
                    "expected the name of a host_bridge or switch listed earlier in $.pcie, "
                    "got \"%s\"",
                    parent);
        return;
    }
    const ics_hw_pcie *pp = pcie_at(nr, pi);
    if (pp->kind != ICS_PCIE_HOST_BRIDGE && pp->kind != ICS_PCIE_SWITCH) {
        ics_jr_fail(R(nr), at, "parent", "expected a host_bridge or switch, got \"%s\" (a %s)",
                    parent, pcie_kind_names[pp->kind]);
        return;
    }
    p->parent = pi;
    p->numa = pp->numa;
}

/* The upstream link: standard and width, defaulting to the device's own. */
static void read_uplink(node_rd *nr, const cJSON *e, ics_hw_pcie *p, const ics_hw_standard *dflt,
                        int dflt_lanes)
{
    p->standard = dflt;
    p->lanes = dflt_lanes;
    if (cJSON_GetObjectItemCaseSensitive(e, "standard")) {
        const ics_hw_standard *s = ics_hw__ref_standard(nr->ld, e, "standard", true);
        bool c2c_ok = p->kind == ICS_PCIE_GPU;
        if (s && s->family != ICS_LINK_PCIE && !(c2c_ok && s->family == ICS_LINK_NVLINK))
            ics_jr_fail(R(nr), cJSON_GetObjectItemCaseSensitive(e, "standard"), "standard",
                        "expected a pcie standard%s, got \"%s\" (%s)",
                        c2c_ok ? " (or nvlink-c2c for a GPU)" : "", s->name,
                        ics_link_family_name(s->family));
        p->standard = s;
    }
    int64_t lanes;
    if (ics_jr_int(R(nr), e, "lanes", false, 1, 32, &lanes))
        p->lanes = (int)lanes;
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(e, "standard");
    if (ics_jr_ok(R(nr)) && p->standard && p->standard->family == ICS_LINK_NVLINK &&
        nr->pcie->len > (guint)p->parent && pcie_at(nr, p->parent)->kind != ICS_PCIE_HOST_BRIDGE)
        ics_jr_fail(R(nr), at ? at : e, "standard",
                    "expected a host_bridge parent for a chip-to-chip link, got a switch");
}

static void read_host_bridge(node_rd *nr, const cJSON *e, ics_hw_pcie *p)
{
    static const char *const keys[] = {"kind", "name", "numa", NULL};
    int64_t numa;
    p->parent = -1;
    if (ics_jr_keys(R(nr), e, keys) && ics_jr_int(R(nr), e, "numa", true, 0, 4095, &numa)) {
        p->numa = (int)numa;
        if (!g_hash_table_contains(nr->numa_ids, GINT_TO_POINTER(p->numa)))
            ics_jr_fail(R(nr), cJSON_GetObjectItemCaseSensitive(e, "numa"), "numa",
                        "expected a NUMA id of one of $.cpus, got %d", p->numa);
    }
}

static void read_pcie_switch(node_rd *nr, const cJSON *e, ics_hw_pcie *p)
{
    static const char *const keys[] = {"kind", "name", "type", "parent", "lanes", "standard", NULL};
    if (!ics_jr_keys(R(nr), e, keys))
        return;
    p->switch_type = ics_hw__ref_switch(nr->ld, e, "type");
    if (p->switch_type && p->switch_type->kind != ICS_SWITCH_PCIE)
        ics_jr_fail(R(nr), cJSON_GetObjectItemCaseSensitive(e, "type"), "type",
                    "expected a pcie_switch type, got \"%s\" (%s)", p->switch_type->name,
                    ics_switch_kind_name(p->switch_type->kind));
    read_parent(nr, e, p);
    if (ics_jr_ok(R(nr)))
        read_uplink(nr, e, p, p->switch_type->standard, 16);
}

static void read_pcie_gpu(node_rd *nr, const cJSON *e, ics_hw_pcie *p, GHashTable *seen)
{
    static const char *const keys[] = {"kind", "index", "parent", "lanes", "standard", NULL};
    const ics_hw_gpu_type *g = nr->node->gpu_type;
    int64_t idx;
    if (!ics_jr_keys(R(nr), e, keys) ||
        !ics_jr_int(R(nr), e, "index", true, 0, nr->node->gpus - 1, &idx))
        return;
    p->gpu = (int)idx;
    if (g_hash_table_contains(seen, GINT_TO_POINTER(p->gpu)))
        ics_jr_fail(R(nr), cJSON_GetObjectItemCaseSensitive(e, "index"), "index",
                    "expected each GPU index once in $.pcie, got %d twice", p->gpu);
    g_hash_table_add(seen, GINT_TO_POINTER(p->gpu));
    read_parent(nr, e, p);
    if (ics_jr_ok(R(nr)))
        read_uplink(nr, e, p, g->pcie, g->pcie_lanes);
}

static void read_pcie_nic(node_rd *nr, const cJSON *e, ics_hw_pcie *p)
{
    static const char *const keys[] = {"kind", "name",  "type",     "parent", "role",
                                       "rail", "lanes", "standard", NULL};
    if (!ics_jr_keys(R(nr), e, keys))
        return;
    p->nic_type = ics_hw__ref_nic(nr->ld, e, "type");
    int role = ICS_NIC_COMPUTE;
    ics_jr_enum(R(nr), e, "role", false, role_names, &role);
    p->role = (ics_nic_role)role;
    p->rail = p->role == ICS_NIC_COMPUTE ? nr->node->compute_nics : -1;
    int64_t rail;
    if (ics_jr_int(R(nr), e, "rail", false, 0, 1023, &rail))
        p->rail = (int)rail;
    if (p->role == ICS_NIC_COMPUTE)
        nr->node->compute_nics++;
    read_parent(nr, e, p);
    if (ics_jr_ok(R(nr)))
        read_uplink(nr, e, p, p->nic_type->pcie, p->nic_type->pcie_lanes);
}

/* A PCIe switch carries its upstream link and every child link on its own lanes. */
static void check_lane_budgets(node_rd *nr, const cJSON *arr)
{
    int n = (int)nr->pcie->len;
    int *used = g_new0(int, n);
    for (int i = 0; i < n; i++) {
        const ics_hw_pcie *p = pcie_at(nr, i);
        if (p->kind == ICS_PCIE_SWITCH)
            used[i] += p->lanes;
        if (p->parent >= 0)
            used[p->parent] += p->lanes;
    }
    int i = 0;
    for (const cJSON *e = arr->child; e && i < n && ics_jr_ok(R(nr)); e = e->next, i++) {
        const ics_hw_pcie *p = pcie_at(nr, i);
        if (p->kind == ICS_PCIE_SWITCH && used[i] > p->switch_type->ports) {
            size_t mark = ics_jr_push_index(R(nr), i);
            ics_jr_fail(R(nr), e, NULL,
                        "expected at most %d lanes on switch \"%s\" (type %s: upstream plus "
                        "children), got %d",
                        p->switch_type->ports, p->name, p->switch_type->name, used[i]);
            ics_jr_pop(R(nr), mark);
        }
    }
    g_free(used);
}

static void read_pcie_element(node_rd *nr, const cJSON *e, GHashTable *seen_gpus)
{
    ics_hw_pcie p = {.parent = -1, .gpu = -1, .rail = -1};
    int kind;
    if (!cJSON_IsObject(e)) { /* the keys each kind takes are checked by its reader */
        char *got = ics_json_describe(e);
        ics_jr_fail(R(nr), e, NULL, "expected an object, got %s", got);
        g_free(got);
        return;
    }
    if (!ics_jr_enum(R(nr), e, "kind", true, pcie_kind_names, &kind))
        return;
    p.kind = (ics_pcie_kind)kind;
    const char *name = NULL;
    if (p.kind != ICS_PCIE_GPU && ics_jr_str(R(nr), e, "name", true, &name))
        p.name = ics_hw__str(nr->ld->hw, name);
    if (p.kind == ICS_PCIE_HOST_BRIDGE)
        read_host_bridge(nr, e, &p);
    else if (p.kind == ICS_PCIE_SWITCH)
        read_pcie_switch(nr, e, &p);
    else if (p.kind == ICS_PCIE_GPU)
        read_pcie_gpu(nr, e, &p, seen_gpus);
    else
        read_pcie_nic(nr, e, &p);
    if (!ics_jr_ok(R(nr)))
        return;
    if (p.kind == ICS_PCIE_GPU) {
        char *gname = g_strdup_printf("gpu%d", p.gpu);
        p.name = ics_hw__str(nr->ld->hw, gname);
        g_free(gname);
    }
    if (g_hash_table_contains(nr->pcie_by_name, p.name)) {
        const cJSON *at =
            cJSON_GetObjectItemCaseSensitive(e, p.kind == ICS_PCIE_GPU ? "index" : "name");
        ics_jr_fail(R(nr), at, p.kind == ICS_PCIE_GPU ? "index" : "name",
                    "expected a name unique in the node, got \"%s\" twice", p.name);
        return;
    }
    g_array_append_val(nr->pcie, p);
    g_hash_table_insert(nr->pcie_by_name, (gpointer)p.name, GINT_TO_POINTER(nr->pcie->len));
}

static void read_pcie(node_rd *nr, const cJSON *obj)
{
    const cJSON *arr = ics_jr_arr(R(nr), obj, "pcie", false);
    if (!arr)
        return;
    GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    size_t mark = ics_jr_push_key(R(nr), "pcie");
    int i = 0;
    for (const cJSON *e = arr->child; e && ics_jr_ok(R(nr)); e = e->next, i++) {
        size_t m2 = ics_jr_push_index(R(nr), i);
        read_pcie_element(nr, e, seen);
        ics_jr_pop(R(nr), m2);
    }
    if (ics_jr_ok(R(nr)))
        check_lane_budgets(nr, arr);
    for (int g = 0; g < nr->node->gpus && ics_jr_ok(R(nr)) && arr->child; g++)
        if (!g_hash_table_contains(seen, GINT_TO_POINTER(g)))
            ics_jr_fail(R(nr), arr, NULL,
                        "expected every GPU 0..%d in the PCIe tree, got no element for GPU %d",
                        nr->node->gpus - 1, g);
    ics_jr_pop(R(nr), mark);
    g_hash_table_destroy(seen);
}

/* ---- NVLink ------------------------------------------------------------------------------- */

/* Endpoint id of a name: GPU k is k, switch j is gpus + j; -1 if neither. */
static int nv_endpoint(node_rd *nr, const char *name)
{
    if (g_str_has_prefix(name, "gpu")) {
        char *end;
        long k = strtol(name + 3, &end, 10);
        if (name[3] && *end == '\0' && k >= 0 && k < nr->node->gpus && g_ascii_isdigit(name[3]))
            return (int)k;
    }
    int j = GPOINTER_TO_INT(g_hash_table_lookup(nr->nvsw_by_name, name)) - 1;
    return j < 0 ? -1 : nr->node->gpus + j;
}

static void read_nvswitches(node_rd *nr, const cJSON *nv)
{
    static const char *const keys[] = {"name", "type", NULL};
    const cJSON *arr = ics_jr_arr(R(nr), nv, "switches", false);
    if (!arr)
        return;
    size_t mark = ics_jr_push_key(R(nr), "switches");
    int i = 0;
    for (const cJSON *e = arr->child; e && ics_jr_ok(R(nr)); e = e->next, i++) {
        size_t m2 = ics_jr_push_index(R(nr), i);
        ics_hw_nvswitch s = {0};
        const char *name;
        if (ics_jr_keys(R(nr), e, keys) && ics_jr_str(R(nr), e, "name", true, &name)) {
            if (nv_endpoint(nr, name) >= 0 || pcie_index(nr, name) >= 0)
                ics_jr_fail(R(nr), cJSON_GetObjectItemCaseSensitive(e, "name"), "name",
                            "expected a name unique in the node, got \"%s\" twice", name);
            s.name = ics_hw__str(nr->ld->hw, name);
            s.type = ics_hw__ref_switch(nr->ld, e, "type");
            if (s.type && s.type->kind != ICS_SWITCH_NVSWITCH)
                ics_jr_fail(R(nr), cJSON_GetObjectItemCaseSensitive(e, "type"), "type",
                            "expected an nvswitch type, got \"%s\" (%s)", s.type->name,
                            ics_switch_kind_name(s.type->kind));
        }
        if (ics_jr_ok(R(nr))) {
            g_array_append_val(nr->nvswitches, s);
            g_hash_table_insert(nr->nvsw_by_name, (gpointer)s.name,
                                GINT_TO_POINTER(nr->nvswitches->len));
        }
        ics_jr_pop(R(nr), m2);
    }
    ics_jr_pop(R(nr), mark);
}

static int nv_capacity(node_rd *nr, int ep)
{
    if (ep < nr->node->gpus)
        return nr->node->gpu_type->nvlinks;
    return g_array_index(nr->nvswitches, ics_hw_nvswitch, ep - nr->node->gpus).type->ports;
}

static const char *nv_name(node_rd *nr, int ep)
{
    if (ep >= nr->node->gpus)
        return g_array_index(nr->nvswitches, ics_hw_nvswitch, ep - nr->node->gpus).name;
    char *s = g_strdup_printf("gpu%d", ep);
    const char *r = ics_hw__str(nr->ld->hw, s);
    g_free(s);
    return r;
}

/* link_mark: the path mark of the link, for errors about its "count". */
static void add_bond(node_rd *nr, const cJSON *link, size_t link_mark, const cJSON *a_item, int b,
                     int count, const ics_hw_standard *std, int *used)
{
    const char *aname = cJSON_IsString(a_item) ? a_item->valuestring : NULL;
    int a = aname ? nv_endpoint(nr, aname) : -1;
    if (a < 0) {
        char *got = ics_json_describe(a_item);
        ics_jr_fail(R(nr), a_item, NULL,
                    "expected a GPU (gpu0..gpu%d) or a switch of $.nvlink.switches, got %s",
                    nr->node->gpus - 1, got);
        g_free(got);
        return;
    }
    if (a == b) {
        ics_jr_fail(R(nr), a_item, NULL, "expected two different endpoints, got \"%s\" twice",
                    aname);
        return;
    }
    gint64 *pair = g_new(gint64, 1); /* O(1) per bond: a node file may hold very many */
    *pair = ((gint64)MIN(a, b) << 32) | MAX(a, b);
    if (!g_hash_table_add(nr->bonds, pair)) {
        ics_jr_fail(R(nr), a_item, NULL,
                    "expected one bond per pair, got %s-%s twice (add the counts)", aname,
                    nv_name(nr, b));
        return;
    }
    int ends[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        used[ends[k]] += count;
        if (used[ends[k]] > nv_capacity(nr, ends[k])) {
            ics_jr_pop(R(nr), link_mark);
            ics_jr_fail(R(nr), cJSON_GetObjectItemCaseSensitive(link, "count"), "count",
                        "expected at most %d NVLinks on %s in all, got %d with the bond %s-%s",
                        nv_capacity(nr, ends[k]), nv_name(nr, ends[k]), used[ends[k]], aname,
                        nv_name(nr, b));
            return;
        }
    }
    /* Default standard: a GPU's own NVLink; between two switches, the switch's. */
    if (!std && (a < nr->node->gpus || b < nr->node->gpus))
        std = nr->node->gpu_type->nvlink;
    else if (!std)
        std = g_array_index(nr->nvswitches, ics_hw_nvswitch, a - nr->node->gpus).type->standard;
    if (!std) {
        ics_jr_fail(R(nr), link, NULL, "expected a GPU type with NVLink, got %s (no NVLink)",
                    nr->node->gpu_type->name);
        return;
    }
    ics_hw_nvbond bond = {.a = a, .b = b, .count = count, .standard = std};
    g_array_append_val(nr->nvbonds, bond);
}

static void read_nvlink_link(node_rd *nr, const cJSON *l, int *used)
{
    size_t link_mark = strlen(ics_jr_path(R(nr)));
    static const char *const keys[] = {"a", "b", "count", "standard", NULL};
    const char *bname;
    int64_t count;
    if (!ics_jr_keys(R(nr), l, keys) || !ics_jr_str(R(nr), l, "b", true, &bname) ||
        !ics_jr_int(R(nr), l, "count", true, 1, 64, &count))
        return;
    int b = nv_endpoint(nr, bname);
    if (b < 0) {
        ics_jr_fail(R(nr), cJSON_GetObjectItemCaseSensitive(l, "b"), "b",
                    "expected a GPU (gpu0..gpu%d) or a switch of $.nvlink.switches, got \"%s\"",
                    nr->node->gpus - 1, bname);
        return;
    }
    const ics_hw_standard *std = NULL;
    if (cJSON_GetObjectItemCaseSensitive(l, "standard")) {
        std = ics_hw__ref_standard(nr->ld, l, "standard", true);
        if (std && std->family != ICS_LINK_NVLINK)
            ics_jr_fail(R(nr), cJSON_GetObjectItemCaseSensitive(l, "standard"), "standard",
                        "expected an nvlink standard, got \"%s\"", std->name);
    }
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(l, "a");
    if (!ics_jr_ok(R(nr)))
        return;
    if (!a) {
        ics_jr_fail(R(nr), l, "a", "expected a name or an array of names, got nothing");
    } else if (cJSON_IsArray(a)) {
        size_t mark = ics_jr_push_key(R(nr), "a");
        int i = 0;
        for (const cJSON *e = a->child; e && ics_jr_ok(R(nr)); e = e->next, i++) {
            size_t m2 = ics_jr_push_index(R(nr), i);
            add_bond(nr, l, link_mark, e, b, (int)count, std, used);
            ics_jr_pop(R(nr), m2);
        }
        if (!a->child)
            ics_jr_fail(R(nr), a, NULL, "expected at least one name, got an empty array");
        ics_jr_pop(R(nr), mark);
    } else {
        size_t mark = ics_jr_push_key(R(nr), "a");
        add_bond(nr, l, link_mark, a, b, (int)count, std, used);
        ics_jr_pop(R(nr), mark);
    }
}

static void read_nvlink(node_rd *nr, const cJSON *obj)
{
    static const char *const keys[] = {"switches", "links", NULL};
    const cJSON *nv = ics_jr_obj(R(nr), obj, "nvlink", false);
    if (!nv)
        return;
    size_t mark = ics_jr_push_key(R(nr), "nvlink");
    if (ics_jr_keys(R(nr), nv, keys))
        read_nvswitches(nr, nv);
    const cJSON *links = ics_jr_arr(R(nr), nv, "links", false);
    int *used = g_new0(int, nr->node->gpus + nr->nvswitches->len + 1);
    if (links) {
        size_t m2 = ics_jr_push_key(R(nr), "links");
        int i = 0;
        for (const cJSON *l = links->child; l && ics_jr_ok(R(nr)); l = l->next, i++) {
            size_t m3 = ics_jr_push_index(R(nr), i);
            read_nvlink_link(nr, l, used);
            ics_jr_pop(R(nr), m3);
        }
        ics_jr_pop(R(nr), m2);
    }
    g_free(used);
    ics_jr_pop(R(nr), mark);
}

/* g_int64_hash keeps only the low 32 bits, which would put every bond to one switch in one
 * bucket; mix both halves (MurmurHash3's finalizer). */
static guint pair_hash(gconstpointer p)
{
    const gint64 *key = p;
    guint64 k = (guint64)*key;
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    return (guint)k;
}

/* ---- the node ----------------------------------------------------------------------------- */

bool ics_hw__read_node(ics_hw__ld *ld, const cJSON *obj)
{
    ics_hw_node *node = &ld->hw->node;
    node_rd nr = {.ld = ld, .node = node};
    const char *s = NULL;
    if (ics_jr_str(ld->r, obj, "name", true, &s))
        node->name = ics_hw__str(ld->hw, s);
    if (ics_jr_str(ld->r, obj, "source", false, &s))
        node->source = ics_hw__str(ld->hw, s);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(obj, "gpus");
    if (ics_jr_ok(ld->r) && cJSON_IsObject(g))
        ics_jr_fail(ld->r, g, "gpus",
                    "expected an integer in 1..4096 (GPU types go in \"gpu_types\"), got an "
                    "object");
    node->gpu_type = ics_hw__ref_gpu(ld, obj, "gpu");
    int64_t gpus;
    if (ics_jr_int(ld->r, obj, "gpus", true, 1, 4096, &gpus))
        node->gpus = (int)gpus;
    if (!ics_jr_ok(ld->r))
        return false;
    nr.cpus = g_array_new(FALSE, TRUE, sizeof(ics_hw_cpu));
    nr.pcie = g_array_new(FALSE, TRUE, sizeof(ics_hw_pcie));
    nr.nvswitches = g_array_new(FALSE, TRUE, sizeof(ics_hw_nvswitch));
    nr.nvbonds = g_array_new(FALSE, TRUE, sizeof(ics_hw_nvbond));
    nr.pcie_by_name = g_hash_table_new(g_str_hash, g_str_equal);
    nr.nvsw_by_name = g_hash_table_new(g_str_hash, g_str_equal);
    nr.bonds = g_hash_table_new_full(pair_hash, g_int64_equal, g_free, NULL);
    nr.numa_ids = g_hash_table_new(g_direct_hash, g_direct_equal);
    read_cpus(&nr, obj);
    read_pcie(&nr, obj);
    read_nvlink(&nr, obj);
    node->n_cpus = (int)nr.cpus->len;
    node->cpus = (const ics_hw_cpu *)g_array_free(nr.cpus, FALSE);
    node->n_pcie = (int)nr.pcie->len;
    node->pcie = (const ics_hw_pcie *)g_array_free(nr.pcie, FALSE);
    node->n_nvswitches = (int)nr.nvswitches->len;
    node->nvswitches = (const ics_hw_nvswitch *)g_array_free(nr.nvswitches, FALSE);
    node->n_nvbonds = (int)nr.nvbonds->len;
    node->nvbonds = (const ics_hw_nvbond *)g_array_free(nr.nvbonds, FALSE);
    g_hash_table_destroy(nr.pcie_by_name);
    g_hash_table_destroy(nr.nvsw_by_name);
    g_hash_table_destroy(nr.bonds);
    g_hash_table_destroy(nr.numa_ids);
    return ics_jr_ok(ld->r);
}
