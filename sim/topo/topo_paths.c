/* Which paths NCCL takes inside a node (topo.h, "which paths NCCL uses"): peer-to-peer between
 * GPUs or through host memory, GPUDirect RDMA between a GPU and its NIC or host buffers. The
 * rules are NCCL's own (src/graph/paths.cc: ncclTopoCheckP2p, ncclTopoCheckGdr and
 * ncclTopoComputePaths, which diverts a pair that may not use them "through the CPU"). */
#include "topo/topo_internal.h"

#include <string.h>

static const char *const path_names[] = {"LOC", "NVL", "PIX", "PXB", "PHB", "SYS"};

const char *ics_path_type_name(ics_path_type p)
{
    return (unsigned)p < ICS_PATH_COUNT ? path_names[p] : "?";
}

int ics_path_type_from_name(const char *name)
{
    for (int i = 0; i < ICS_PATH_COUNT; i++)
        if (g_ascii_strcasecmp(name, path_names[i]) == 0)
            return i;
    return -1;
}

ics_path_type ics_topo_path_type(const ics_topo *t, int a, int b)
{
    if (a == b)
        return ICS_PATH_LOC;
    char buf[16];
    const char *cls = ics_topo_path_class(t, a, b, buf);
    if (cls[0] == 'N' && cls[1] == 'V')
        return ICS_PATH_NVL;
    static const ics_path_type by_rank[] = {ICS_PATH_PIX, ICS_PATH_PXB, ICS_PATH_PHB,
                                            ICS_PATH_PHB /* NODE */, ICS_PATH_SYS};
    int r = ics_topo_path_class_rank(cls);
    return r < 5 ? by_rank[r] : ICS_PATH_SYS;
}

void ics_topo_set_paths(ics_topo *t, const ics_topo_paths *p)
{
    t->paths = *p;
    t->paths.ib_hca[ICS_TOPO_IB_HCA_MAX - 1] = '\0';
    if (t->path_index) /* intact: answer again under the new rules */
        ics_topo_index_paths(t);
    ics_topo_apply_hca(t);
    if (t->gpu_nic_index) { /* intact: each GPU's NICs among those NCCL_IB_HCA keeps */
        g_clear_pointer(&t->gpu_nic_index, g_free);
        ics_topo_index_nics(t);
    }
}

static const ics_hw_cpu_type *node_cpu(const ics_topo *t)
{
    const ics_hw_node *n = ics_hw_node_of(t->hw);
    return n->n_cpus > 0 ? n->cpus[0].type : NULL;
}

/* NCCL's default P2P level: through anything but Intel, Zhaoxin and Arm root complexes
 * ("Don't use P2P through ARM CPUs"; Intel: PXB). */
static int default_p2p_level(const ics_topo *t)
{
    ics_cpu_vendor v = ics_hw_cpu_vendor(node_cpu(t));
    return v == ICS_CPU_INTEL || v == ICS_CPU_ARM ? ICS_PATH_PXB : ICS_PATH_SYS;
}

static bool p2p_rule(const ics_topo *t, int a, int b);
static bool gdr_rule(const ics_topo *t, int gpu, int nic, bool send);

void ics_topo_index_paths(ics_topo *t)
{
    int gpn = t->gpus, nics = t->nics;
    uint8_t *index = g_new0(uint8_t, (size_t)gpn * gpn + (size_t)gpn * MAX(nics, 1));
    for (int a = 0; a < gpn; a++)
        for (int b = 0; b < gpn; b++)
            index[a * gpn + b] = p2p_rule(t, ics_topo_gpu(t, 0, a), ics_topo_gpu(t, 0, b));
    for (int g = 0; g < gpn; g++)
        for (int i = 0; i < nics; i++) {
            int gpu = ics_topo_gpu(t, 0, g), nic = ics_topo_nic(t, 0, i);
            index[gpn * gpn + g * nics + i] =
                (uint8_t)(gdr_rule(t, gpu, nic, true) | gdr_rule(t, gpu, nic, false) << 1);
        }
    g_free(t->path_index);
    t->path_index = index;
}

/* The index of NIC device `nic` in its node's list, or -1. */
static int nic_index(const ics_topo *t, int nic)
{
    const ics_topo_dev *d = ics_topo_dev_get(t, nic);
    for (int i = 0; i < t->nics; i++)
        if (ics_topo_nic(t, d->node, i) == nic)
            return i;
    return -1;
}

bool ics_topo_uses_p2p(const ics_topo *t, int a, int b)
{
    const ics_topo_dev *x = ics_topo_dev_get(t, a), *y = ics_topo_dev_get(t, b);
    if (t->path_index && x->kind == ICS_DEV_GPU && y->kind == ICS_DEV_GPU && x->node == y->node)
        return t->path_index[x->local * t->gpus + y->local];
    return p2p_rule(t, a, b);
}

bool ics_topo_uses_gdr(const ics_topo *t, int gpu, int nic, bool send)
{
    const ics_topo_dev *g = ics_topo_dev_get(t, gpu), *n = ics_topo_dev_get(t, nic);
    int i = t->path_index && g->kind == ICS_DEV_GPU && n->node == g->node ? nic_index(t, nic) : -1;
    if (i >= 0)
        return t->path_index[t->gpus * t->gpus + g->local * t->nics + i] >> (send ? 0 : 1) & 1;
    return gdr_rule(t, gpu, nic, send);
}

static bool p2p_rule(const ics_topo *t, int a, int b)
{
    const ics_hw_gpu_type *g = ics_hw_node_of(t->hw)->gpu_type;
    if (!g->p2p) /* the driver refuses the mapping: NCCL's canConnect fails */
        return false;
    int level = t->paths.p2p_level >= 0 ? t->paths.p2p_level : default_p2p_level(t);
    return (int)ics_topo_path_type(t, a, b) <= level;
}

/* Whether GPU `gpu` has an NVLink peer in its node (or is alone in it). */
static bool has_nvlink_peer(const ics_topo *t, int gpu)
{
    const ics_topo_dev *d = ics_topo_dev_get(t, gpu);
    if (t->gpus == 1)
        return true;
    for (int g = 0; g < t->gpus; g++) {
        int o = ics_topo_gpu(t, d->node, g);
        if (o != gpu && ics_topo_path_type(t, gpu, o) == ICS_PATH_NVL)
            return true;
    }
    return false;
}

/* The architecture's number: "sm80" -> 80. */
static int arch_number(const ics_hw_gpu_type *g)
{
    return g->arch && strlen(g->arch) > 2 ? atoi(g->arch + 2) : 0;
}

/* How far NCCL's P2C reaches: PHB for a GPU on a C2C link to its CPU (Grace), else PXB. */
static int p2c_level(const ics_topo *t)
{
    const ics_hw_gpu_type *g = ics_hw_node_of(t->hw)->gpu_type;
    return g->pcie && g->pcie->family == ICS_LINK_NVLINK ? ICS_PATH_PHB : ICS_PATH_PXB;
}

static bool gdr_rule(const ics_topo *t, int gpu, int nic, bool send)
{
    const ics_hw_gpu_type *g = ics_hw_node_of(t->hw)->gpu_type;
    if (!g->gdr)
        return false;
    /* sends are NIC reads of GPU memory: off where NCCL_NET_GDR_READ=0, and by default before
     * Ampere when the GPU has no NVLink peer (its PCIe carries the other flows too) */
    if (send && t->paths.gdr_read == 0)
        return false;
    if (send && t->paths.gdr_read < 0 && arch_number(g) < 80 && !has_nvlink_peer(t, gpu))
        return false;
    /* NCCL_NET_GDR_C2C (default on): a GPU on a C2C link reaches its CPU's NICs through the
     * CPU (NCCL's P2C path, which our classes call PHB/NODE) and still uses GDR */
    int level = t->paths.gdr_level >= 0 ? t->paths.gdr_level : p2c_level(t);
    return (int)ics_topo_path_type(t, gpu, nic) <= level;
}

bool ics_topo_pcie_sends(const ics_topo *t, int gpu, int nic)
{
    return (int)ics_topo_path_type(t, gpu, nic) <= p2c_level(t) &&
           ics_topo_uses_gdr(t, gpu, nic, true);
}
