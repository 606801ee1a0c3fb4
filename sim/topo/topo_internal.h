/* What the topology's files share: the object itself (topo.c builds it, topo_fail.c takes parts
 * of it down, route.c reads it) and the index that must be rebuilt when channels go. Nothing
 * outside sim/topo/ includes this. */
#ifndef ICS_TOPO_INTERNAL_H
#define ICS_TOPO_INTERNAL_H

#include "topo/topo.h"

struct ics_topo {
    const ics_hw *hw;
    GArray *devs;              /* ics_topo_dev */
    GArray *chans;             /* ics_topo_chan */
    int *out_start, *out_list; /* outgoing channels, CSR */
    int *out_dst;              /* out_list's channels' far ends, beside them: what
                                  ics_topo_chan_between scans without reading each channel */
    int nodes, gpus, nics, devs_per_node;
    int *pcie_dev; /* pcie element -> device offset within a node */
    int *gpu_pcie; /* GPU index -> pcie element, or -1 */
    int *nic_pcie; /* i-th NIC -> pcie element */
    int *sw_comp;  /* NVSwitch -> connected component among switches */
    bool has_fabric;
    int tier0[4]; /* first device id of each fabric tier (1..3) */
    ics_fattree_params fp;
    bool dragonfly; /* the fabric is a dragonfly (df); plan then holds its switches as
                       leaves, its groups as pods */
    ics_dragonfly_params df;
    ics_fattree_plan plan;
    char **labels;
    GHashTable *by_label; /* label -> device id + 1 */
    GPtrArray *failures;  /* char *: what each applied failure did (topo_fail.c); NULL: none */
    /* the nearest compute NIC of each local GPU (index for ics_topo_nic), found on node 0 and
     * the same on every node of the model as built; dropped (NULL) once ics_topo_build_csr runs
     * again, i.e. after failures, when nodes may differ and route.c searches each time */
    int *gpu_nic_index;
    ics_topo_paths paths; /* NCCL's environment (topo_paths.c); -1 fields: defaults */
    /* per NIC index, NICs NCCL_IB_HCA leaves out (topo_hca.c); NULL: none */
    uint8_t *hca_off;
    bool hca_ignored; /* NCCL_IB_HCA set but keeping no compute NIC: not applied */
    /* the path rules' answers for node 0's devices, the same on every node of the model as
     * built (topo_paths.c, ics_topo_index_paths): per GPU pair whether it uses P2P, then per
     * (GPU, NIC) whether sends and receives use GPUDirect RDMA (bits 0 and 1); routes ask
     * them for every transfer. NULL after failures, when nodes may differ: asked each time */
    uint8_t *path_index;
};

/* Fills gpu_nic_index (route.c). */
void ics_topo_index_nics(ics_topo *t);
/* Fills path_index (topo_paths.c) under the rules in effect. */
void ics_topo_index_paths(ics_topo *t);
/* Fills hca_off and hca_ignored from paths.ib_hca (topo_hca.c). */
void ics_topo_apply_hca(ics_topo *t);

/* (Re)builds the outgoing-channel index (out_start, out_list, out_dst) from chans. O(devices +
 * channels). */
void ics_topo_build_csr(ics_topo *t);

#endif
