/* Hardware models: link standards, component types, one node's wiring and a cluster's fabric,
 * read from the JSON files described in docs/hwmodel-format.md. Everything is validated
 * before it is returned: downstream code (topo, route, backends) may trust every field. The
 * structs are plain and read-only; an ics_hw owns all of them and all their strings. */
#ifndef ICS_HW_H
#define ICS_HW_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "hw/dragonfly.h"
#include "hw/fattree.h"
#include "core/core.h"

typedef enum {
    ICS_LINK_NVLINK,
    ICS_LINK_PCIE,
    ICS_LINK_INFINIBAND,
    ICS_LINK_ETHERNET,
    ICS_LINK_FAMILY_COUNT
} ics_link_family;

/* One link of a standard, one direction. For PCIe one "link" is one lane: widths are given
 * where a link is used. */
typedef struct {
    const char *name;
    ics_link_family family;
    const char *generation;
    int lanes;
    double lane_gbps;     /* transfer rate per lane before line encoding */
    const char *encoding; /* "128b/130b", ... */
    int enc_data_bits;    /* encoding efficiency = enc_data_bits / enc_total_bits */
    int enc_total_bits;
    const char *modulation;    /* "NRZ", "PAM4" or NULL */
    int max_payload_bytes;     /* per packet */
    int packet_overhead_bytes; /* headers, CRC, framing per packet */
    ics_time latency_ps;       /* one hop: SerDes + wire + port */
    const char *source;
} ics_hw_standard;

/* How fast this GPU runs compute ops given as work (workload/compute.h): the catalog's
 * optional "compute" object; every key is optional and defaults to ics_hw_compute_defaults()
 * (hw_compute.c, where each default's source is given). */
typedef struct {
    double gemm_eff;              /* fraction of the dense peak a large GEMM sustains */
    double gemm_eff_fp8;          /* the same for FP8 GEMMs (of the FP8 peak) */
    int gemm_tile_m, gemm_tile_n; /* output tile: a GEMM computes m and n rounded up to these */
    ics_time gemm_wave_ps;        /* per wave of output tiles: prologue and epilogue */
    bool gemm_stream_k; /* the GEMM library spreads a partial last wave's work over every SM
                           (persistent stream-K kernels: Hopper's cuBLASLt) instead of running
                           it as a whole wave */
    double attn_eff;    /* fraction of the dense peak fused attention sustains on the FLOPs it
                           runs (a causal mask's skipped tiles not counted) */
    double mem_eff;     /* fraction of HBM bandwidth memory-bound kernels sustain */
    ics_time launch_ps; /* per kernel: launch and the gap between kernels */
    double sustained;   /* the share of its boost-clock tensor-core rate the GPU keeps when power
                           bounds its clock, as through a training step (MSMF / MAMF): GEMMs and
                           attention run at it; the efficiencies above are boost-clock ones, as
                           short GEMM benchmarks measure them (1: no power-bound clock known) */
    const char *source; /* NULL: the defaults' */
} ics_hw_compute;

typedef struct {
    const char *name; /* catalog key */
    const char *product;
    const char *arch;              /* "sm90" */
    const ics_hw_standard *nvlink; /* NULL: no NVLink */
    int nvlinks;
    const ics_hw_standard *pcie; /* host link (PCIe or C2C) */
    int pcie_lanes;
    double tflops[ICS_DTYPE_COUNT]; /* dense peak; 0 = not supported */
    int sms;                        /* streaming multiprocessors; 0 = not given (no waves) */
    uint64_t hbm_bytes;
    uint64_t hbm_bw_bytes_per_s;
    bool p2p; /* the driver lets other GPUs map its memory over PCIe (GeForce parts: no) */
    bool gdr; /* NICs may read and write its memory directly (GPUDirect RDMA) */
    ics_hw_compute compute;
    const char *source;
} ics_hw_gpu_type;

typedef enum {
    ICS_SWITCH_NVSWITCH,
    ICS_SWITCH_PCIE,
    ICS_SWITCH_INFINIBAND,
    ICS_SWITCH_ETHERNET,
    ICS_SWITCH_KIND_COUNT
} ics_switch_kind;

typedef struct {
    const char *name;
    const char *product;
    ics_switch_kind kind;
    int ports; /* PCIe switches: lanes */
    const ics_hw_standard *standard;
    ics_time latency_ps;            /* port to port */
    bool sharp;                     /* in-network reduction (NVLS / SHARP) */
    uint64_t reduce_bw_bytes_per_s; /* sharp: reduction throughput (0: line rate of a port) */
    const char *source;
} ics_hw_switch_type;

typedef struct {
    const char *name;
    const char *product;
    const ics_hw_standard *standard; /* network side */
    const ics_hw_standard *pcie;     /* host side */
    int pcie_lanes;
    ics_time latency_ps;
    /* What the NCCL network plugin that drives this NIC reports to NCCL as its latency
     * (ncclNetProperties_t.latency; 0, NCCL's own IB and socket transports' figure, where the
     * catalog gives none). NCCL adds it to every network hop of its cost model (tuning.cc: the
     * graph's latencyInter, twice with Simple for the receive flush), and icsim charges NCCL's
     * per-hop latencies as what a hop costs (collectives/tuner_nccl.c). */
    ics_time plugin_latency_ps;
    const char *source;
} ics_hw_nic_type;

typedef struct {
    const char *name;
    const char *product;
    uint64_t socket_link_bw_bytes_per_s;
    ics_time socket_link_latency_ps;
    uint64_t p2p_bw_bytes_per_s;    /* PCIe P2P through the root complex */
    uint64_t memory_bw_bytes_per_s; /* DRAM, the whole socket; 0: not given */
    const char *source;
} ics_hw_cpu_type;

/* Whose CPU, as NCCL tells them apart (its P2P and network defaults differ by vendor): read
 * from the product name ("Intel", "AMD", "Grace"/"Arm"). */
typedef enum { ICS_CPU_OTHER, ICS_CPU_INTEL, ICS_CPU_AMD, ICS_CPU_ARM } ics_cpu_vendor;
ics_cpu_vendor ics_hw_cpu_vendor(const ics_hw_cpu_type *c);

/* ---- a node ---- */

typedef struct {
    const char *name;
    const ics_hw_cpu_type *type;
    int n_numa;
    const int *numa; /* NUMA ids */
} ics_hw_cpu;

typedef enum { ICS_PCIE_HOST_BRIDGE, ICS_PCIE_SWITCH, ICS_PCIE_GPU, ICS_PCIE_NIC } ics_pcie_kind;

typedef enum { ICS_NIC_COMPUTE, ICS_NIC_STORAGE } ics_nic_role;

typedef struct {
    ics_pcie_kind kind;
    const char *name;
    int parent;                            /* index in pcie[], -1 for host bridges */
    int numa;                              /* host bridges: NUMA id; others: inherited */
    const ics_hw_switch_type *switch_type; /* switches */
    const ics_hw_nic_type *nic_type;       /* NICs */
    int gpu;                               /* GPUs: index */
    ics_nic_role role;                     /* NICs */
    int rail;                              /* compute NICs: fabric rail */
    const ics_hw_standard *standard;       /* upstream link (not host bridges) */
    int lanes;                             /* upstream link width */
} ics_hw_pcie;

typedef struct {
    const char *name;
    const ics_hw_switch_type *type;
} ics_hw_nvswitch;

/* A bond of `count` NVLinks. Endpoints: 0..gpus-1 are GPUs, gpus + j is nvswitches[j]. */
typedef struct {
    int a, b;
    int count;
    const ics_hw_standard *standard;
} ics_hw_nvbond;

typedef struct {
    const char *name;
    const char *source;
    const ics_hw_gpu_type *gpu_type;
    int gpus;
    int n_cpus;
    const ics_hw_cpu *cpus;
    int n_pcie;
    const ics_hw_pcie *pcie; /* parents precede children */
    int n_nvswitches;
    const ics_hw_nvswitch *nvswitches;
    int n_nvbonds;
    const ics_hw_nvbond *nvbonds;
    int compute_nics; /* NICs with role compute */
} ics_hw_node;

/* ---- a cluster's fabric ---- */

typedef enum { ICS_FABRIC_FAT_TREE, ICS_FABRIC_DRAGONFLY } ics_fabric_topology;

typedef struct {
    ics_fabric_topology topology;
    int tiers; /* 1..3 */
    const ics_hw_switch_type *switch_type;
    const ics_hw_standard *standard;
    int radix;
    double oversubscription; /* leaf down:up */
    bool rail_optimized;
    int nodes_per_unit;
    ics_time switch_latency_ps;
    bool sharp;
    /* dragonfly (hw/dragonfly.h): groups, switches a group, nodes a switch, global links a
       switch; valiant: route through a random intermediate group (non-minimal) */
    int groups, group_switches, switch_nodes, global_links;
    bool valiant;
} ics_hw_fabric;

typedef struct ics_hw ics_hw;

/* The largest cluster the reader takes, in GPUs: five times the largest machines built (2^20;
 * docs/limits.md). Its topology is also estimated against the memory budget (core/budget.h)
 * before the load returns. */
#define ICS_HW_MAX_CLUSTER_GPUS (1 << 20)

/* Loads a node or cluster file (and the catalog it names). nodes_override > 0 replaces a
 * cluster's node count (error for a node file). Returns NULL and sets err (domain
 * ICS_JSON_ERROR) with "file:line:col: $.path: expected ..., got ..." on bad input, a cluster
 * past ICS_HW_MAX_CLUSTER_GPUS or one whose topology outgrows the memory budget included.
 * Transfer full: free with ics_hw_free. */
ics_hw *ics_hw_load(const char *path, int nodes_override, GError **err);

/* The same from a single self-contained text (no catalog reference is followed): for the
 * fuzzer and tests. */
ics_hw *ics_hw_load_text(const char *name, const char *text, size_t len, GError **err);

void ics_hw_free(ics_hw *hw);

const char *ics_hw_name(const ics_hw *hw); /* the top-level file's "name" */
const char *ics_hw_path(const ics_hw *hw); /* the file it was loaded from */
/* A calibration overlay's base model (the node or cluster file it names), else the model's own
 * path: what a new calibration of this system should name as its base. */
const char *ics_hw_base_path(const ics_hw *hw);
const ics_hw_node *ics_hw_node_of(const ics_hw *hw);
int ics_hw_nodes(const ics_hw *hw);                      /* 1 for a node file */
const ics_hw_fabric *ics_hw_fabric_of(const ics_hw *hw); /* NULL for a node file */
/* The value the model's "nccl_conf" gives NCCL variable `name` (the system's own NCCL settings,
 * as /etc/nccl.conf or a network plugin's profile sets them; a cluster file's entries replace
 * its node file's), or NULL (also for hw NULL). Transfer none. */
const char *ics_hw_nccl_conf(const ics_hw *hw, const char *name);
/* The variables the model's "nccl_conf" sets, in name order, NULL-terminated: free the array
 * (g_free), not its strings. */
const char **ics_hw_nccl_conf_names(const ics_hw *hw);

/* Catalog lookups (transfer none); NULL if absent. */
const ics_hw_standard *ics_hw_standard_find(const ics_hw *hw, const char *name);
/* All standards, in catalog order. */
const ics_hw_standard *const *ics_hw_standards(const ics_hw *hw, int *n);
/* A switch type by catalog name ("nvswitch3", "quantum2"), or NULL; every switch type, *n of
 * them (transfer none). */
const ics_hw_switch_type *ics_hw_switch_type_find(const ics_hw *hw, const char *name);
const ics_hw_switch_type *const *ics_hw_switch_types(const ics_hw *hw, int *n);

/* Payload bandwidth, one direction, of `width` links (PCIe: lanes) of a standard, after line
 * encoding, in bytes per second (rounded to nearest). */
uint64_t ics_hw_standard_bw(const ics_hw_standard *s, int width);
/* A standard alone, from the shipped catalog (for `icsim explain nvlink4`). */
ics_hw *ics_hw_load_catalog(const char *path, GError **err);

/* The fat-tree sizing parameters of a cluster (its fabric, node count and NIC rails). */
void ics_hw_fattree_params(const ics_hw *hw, ics_fattree_params *p);
/* The same for a dragonfly fabric (hw/dragonfly.h). */
void ics_hw_dragonfly_params(const ics_hw *hw, ics_dragonfly_params *p);

/* ---- calibration (hw_calibration.c) ---- */

/* What a calibration measured about a system, replacing defaults from datasheets and NCCL's
 * constants in the simulation (never in NCCL's own choices: its tuner keeps its constants, as
 * the real NCCL does). A model file's optional "calibration" object, or an overlay file of
 * kind "calibration" that names its base model (docs/hwmodel-format.md); `icsim calibrate`
 * writes the overlay. */
typedef enum {
    ICS_CAL_NVLINK_GBPS,      /* what NCCL's kernels move per NVLink, GB/s */
    ICS_CAL_CTA_GBPS,         /* what one channel's CTA copies, GB/s */
    ICS_CAL_SYNC_US,          /* a Simple slice's synchronization, us */
    ICS_CAL_NVLS_EFF,         /* NVLS efficiency */
    ICS_CAL_HOP_SCALE_NVLINK, /* factors on NCCL's per-hop latencies, by link class */
    ICS_CAL_HOP_SCALE_PCI,
    ICS_CAL_HOP_SCALE_NET,
    ICS_CAL_BASE_SCALE, /* factor on NCCL's base latency */
    ICS_CAL_NET_EFF,    /* share of a NIC's line rate the transport reaches */
    ICS_CAL_LAUNCH_US,  /* host launch per GPU, in series on a thread driving several */
    ICS_CAL_PROXY_US,   /* the proxy thread's posting of one network operation, us */
    ICS_CAL_MSG_US,     /* the network transport's gap per message on a NIC, us */
    ICS_CAL_COUNT
} ics_cal_param;

typedef struct {
    const char *key;  /* the JSON key */
    const char *unit; /* "GB/s", "us", "x" (a factor), "" (a fraction) */
    double lo, hi;    /* physical bounds: the reader's range and the fit's */
    const char *what; /* one line, with the default's source */
    /* The default is a published figure or one derived from it by a stated rule (NCCL's
     * constants; the latency factors' 1, which is NCCL's latencies themselves; cta_gbps and
     * sync_us, halves of NCCL's ceilings; NVIDIA's measured launch), not a placeholder for a
     * figure nobody published: net_eff's 1 is the NIC's line rate, an ideal no transport was
     * measured at, and msg_us's 0 is no gap at all. Where the data fix only a pair's
     * combination, the fit holds the published one and moves the other (calib_fit.c). */
    bool published;
} ics_cal_param_info;

typedef struct {
    double value[ICS_CAL_COUNT]; /* NAN: not calibrated, the default holds */
    const char *source;          /* what it came from, or NULL */
} ics_hw_calibration;

/* The parameter table (NULL out of range); a parameter by its key, or -1. */
const ics_cal_param_info *ics_hw_cal_param(ics_cal_param p);
int ics_hw_cal_param_find(const char *key);
const ics_hw_calibration *ics_hw_calibration_of(const ics_hw *hw);
/* A parameter's calibrated value, NAN where the default holds. */
double ics_hw_cal(const ics_hw *hw, ics_cal_param p);
/* Sets a calibrated value (NAN: back to the default); for the fitter, which owns its model.
 * Topologies and communicators built before read the new value once rebuilt. */
void ics_hw_cal_set(ics_hw *hw, ics_cal_param p, double value);

/* The compute parameters every GPU type starts from (sources in hw_compute.c and
 * docs/workload.md). */
void ics_hw_compute_defaults(ics_hw_compute *c);
/* The defaults for a GPU of architecture `arch` ("sm90"; NULL: none known): the same, with what
 * the architecture's GEMM library does differently (hw_compute.c says what and why). */
void ics_hw_compute_defaults_for(ics_hw_compute *c, const char *arch);

const char *ics_link_family_name(ics_link_family f);
const char *ics_switch_kind_name(ics_switch_kind k);

#endif
