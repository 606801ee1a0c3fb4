/* The topology: every device of every node and of the fabric, and the one-way channels between
 * them. A physical link (or a bond of parallel links between the same two devices, which the
 * hardware stripes as one) is two channels, one per direction; channel c's reverse is
 * ics_topo_chan(t, c)->reverse. Built once from a validated ics_hw; read-only afterwards.
 *
 * Device ids: node n's devices are contiguous, GPUs first, so GPU g of node n is
 * ics_topo_gpu(t, n, g). Fabric switches come after all nodes. */
#ifndef ICS_TOPO_H
#define ICS_TOPO_H

#include <stdint.h>

#include "hw/hw.h"
#include "core/core.h"

typedef enum {
    ICS_DEV_GPU,
    ICS_DEV_NVSWITCH,
    ICS_DEV_PCIE_SWITCH,
    ICS_DEV_HOST_BRIDGE,
    ICS_DEV_CPU, /* a socket */
    ICS_DEV_NIC,
    ICS_DEV_NET_SWITCH, /* InfiniBand or Ethernet fabric switch */
    ICS_DEV_KIND_COUNT
} ics_dev_kind;

typedef enum {
    ICS_CHAN_NVLINK,
    ICS_CHAN_PCIE,    /* includes chip-to-chip links to a host bridge */
    ICS_CHAN_CPU,     /* host bridge <-> socket: P2P through the root complex */
    ICS_CHAN_SOCKET,  /* socket <-> socket (UPI, xGMI) */
    ICS_CHAN_NETWORK, /* NIC <-> switch, switch <-> switch */
    ICS_CHAN_MEMORY,  /* host bridge <-> its socket's DRAM: DMA to and from host memory, which
                         NCCL's SHM transport and network buffers without GPUDirect RDMA use */
    ICS_CHAN_KIND_COUNT
} ics_chan_kind;

typedef struct {
    ics_dev_kind kind;
    const char *name;    /* unique within its node (or the fabric): "gpu3", "mlx5_0", "leaf12" */
    int node;            /* -1: a fabric switch */
    int local;           /* GPUs: GPU index; PCIe devices: index in the node's pcie[];
                            NVSwitches: index; CPUs: socket index; fabric switches: index in tier */
    int pcie_parent;     /* device id of the PCIe parent; host bridges: their socket; else -1 */
    int numa;            /* PCIe devices and host bridges; -1 otherwise */
    int socket;          /* CPU socket (device id) the device hangs under, or -1 */
    int tier;            /* fabric switches: 1 leaf, 2 spine, 3 core */
    int pod;             /* fabric switches (3 tiers): pod of leaves and spines; cores: group */
    int rail;            /* compute NICs and rail-optimized leaves; -1 otherwise */
    ics_time latency_ps; /* crossing the device: switch port to port, NIC processing */
    const ics_hw_switch_type *switch_type; /* NVSwitches, PCIe and fabric switches; else NULL */
    bool down; /* taken down by ics_topo_fail (a NIC also when its fabric port died): it has no
                  channels left and routes never pick it */
} ics_topo_dev;

typedef struct {
    int src, dst; /* device ids */
    int reverse;  /* the channel in the other direction */
    ics_chan_kind kind;
    const ics_hw_standard *standard; /* NULL for CPU and socket channels */
    int width;                       /* bonded links (NVLink, network) or lanes (PCIe) */
    uint64_t bw_bytes_per_s;         /* payload bandwidth after line encoding */
    ics_time latency_ps;             /* SerDes + wire + port */
} ics_topo_chan;

typedef struct ics_topo ics_topo;

/* Builds the topology of hw (transfer none: hw must outlive the topology). Never fails on a
 * model that ics_hw_load accepted. Transfer full: free with ics_topo_free. */
ics_topo *ics_topo_new(const ics_hw *hw);
void ics_topo_free(ics_topo *t);

const ics_hw *ics_topo_hw(const ics_topo *t);
int ics_topo_ndevs(const ics_topo *t);
int ics_topo_nchans(const ics_topo *t);
const ics_topo_dev *ics_topo_dev_get(const ics_topo *t, int dev);
const ics_topo_chan *ics_topo_chan_get(const ics_topo *t, int chan);
int ics_topo_nodes(const ics_topo *t);
int ics_topo_gpus_per_node(const ics_topo *t);
int ics_topo_gpu(const ics_topo *t, int node, int gpu);
/* Ranks as launchers place them, nodes in order: rank r is GPU r % gpn of node r / gpn, for
 * r < n (gpn <= GPUs per node; n <= gpn x nodes). Fills out[0 .. n). */
void ics_topo_gpus_by_node(const ics_topo *t, int gpn, int n, int *out);
/* Device id of the i-th NIC (compute and storage, in pcie[] order) of a node; count via
 * ics_topo_nics_per_node. */
int ics_topo_nics_per_node(const ics_topo *t);
int ics_topo_nic(const ics_topo *t, int node, int i);
/* Outgoing channels of a device: *n of them (transfer none). */
const int *ics_topo_out(const ics_topo *t, int dev, int *n);
/* The channel from a to b, or -1. O(degree of a). */
int ics_topo_chan_between(const ics_topo *t, int a, int b);
/* The fat-tree plan of a cluster (NULL for a single node). */
const ics_fattree_plan *ics_topo_fattree(const ics_topo *t);
/* Device id of fabric switch `index` of a tier (1 leaf, 2 spine, 3 core), or -1. */
int ics_topo_net_switch(const ics_topo *t, int tier, int index);
/* "<node>:<name>" for node devices, the bare name for fabric switches (transfer none). */
const char *ics_topo_dev_label(const ics_topo *t, int dev);
/* Device id by label (as above, or a bare name meaning node 0), or -1. */
int ics_topo_find(const ics_topo *t, const char *label);

/* ---- failures and degradations (topo_fail.c) ---- */

/* Takes parts of a built topology down or slows them, as a what-if: `specs` is one failure or
 * several separated by commas or blanks, each of the form KIND:[NODE:]WHAT, where NODE is a node
 * number or `*` (every node; default node 0) and names are ics_topo_find's:
 *   nvlink:A-B       the NVLink bond between GPUs or NVSwitches A and B dies (DGX-1: gpu0-gpu1)
 *   nvswitch:NAME    an NVSwitch dies with all its links
 *   nic:NAME         a NIC dies (its PCIe and fabric links)
 *   switch:NAME      a fabric switch (leaf, spine, core) dies; NICs cabled to it go down
 *   link:A-B         the link or bond between A and B dies (NVLink or network only)
 *   link:A-B@F       it runs at F x its rate, 0 < F <= 1 (any link: PCIe too)
 *   lanes:A-B=N      the bond keeps N of its links (NVLink: NVLinks; network: cables; PCIe:
 *                    lanes), its rate in proportion; 0 is link:A-B
 * A dead link loses both of its channels (they leave ics_topo_chan_get's numbering, which is
 * compacted: channel ids change, device ids never do); a dead device keeps its id, `down`
 * set. Routes, NCCL's channel search and NVLS/SHARP read what is left. Refused (false,
 * ICS_ERROR_INPUT naming the spec, topology unchanged by that spec): a malformed spec, a name
 * that is not there or of the wrong kind, a link that does not exist or is already down, and a
 * failure that splits the machine (a node without a live compute NIC, two leaves no live
 * up/down path joins, two GPUs of a node that had a path without one: a node with no PCIe tree
 * lives on its NVLinks). Call before anything reads the topology (communicators, backends). */
bool ics_topo_fail(ics_topo *t, const char *specs, GError **error);
/* Failures applied so far, and what each did ("0:nvsw2 down: 8 NVLink bonds (36 links)");
 * transfer none. 0: the topology is as the model built it. */
int ics_topo_nfailures(const ics_topo *t);
const char *ics_topo_failure(const ics_topo *t, int i);

/* ---- facts (topo_facts.c) ---- */

/* Devices of each kind, over the whole topology. */
void ics_topo_count_kinds(const ics_topo *t, int counts[ICS_DEV_KIND_COUNT]);
/* Sum of the bandwidth (one direction) of a device's outgoing channels of one kind, and the
 * number of links (NVLink bonds count each link, PCIe counts lanes) in *width. */
uint64_t ics_topo_dev_bw(const ics_topo *t, int dev, ics_chan_kind kind, int *width);
/* Bisection bandwidth of the fabric, one direction, bytes/s: half the smallest capacity among
 * the NIC links, the leaf uplinks and (3 tiers) the spine uplinks. 0 without a fabric. */
uint64_t ics_topo_bisection_bw(const ics_topo *t);

const char *ics_dev_kind_name(ics_dev_kind k);
const char *ics_chan_kind_name(ics_chan_kind k);

/* The path class `nvidia-smi topo -m` prints between two devices of one node: "X", "NV#",
 * "PIX", "PXB", "PHB", "NODE" or "SYS". buf has room for 16 bytes. Returns buf. */
const char *ics_topo_path_class(const ics_topo *t, int a, int b, char buf[16]);
/* How far a PCIe path class is, as NCCL ranks path types: PIX 0, PXB 1, PHB 2, NODE 3, SYS 4;
 * anything else (X, NV#) 5. */
int ics_topo_path_class_rank(const char *cls);

/* ---- which paths NCCL uses (topo_paths.c) ----
 * NCCL's path types, nearest first (src/graph/topo.h), as NCCL_P2P_LEVEL and
 * NCCL_NET_GDR_LEVEL name them. NVML's NODE (host bridges of one socket) is NCCL's PHB. */
typedef enum {
    ICS_PATH_LOC,
    ICS_PATH_NVL,
    ICS_PATH_PIX,
    ICS_PATH_PXB,
    ICS_PATH_PHB,
    ICS_PATH_SYS,
    ICS_PATH_COUNT
} ics_path_type;

/* "LOC", "NVL", ... ; the name of a type, or -1 for a name NCCL does not know. */
const char *ics_path_type_name(ics_path_type p);
int ics_path_type_from_name(const char *name);
/* The path type between two devices of one node (GPUs on NVLink: NVL). */
ics_path_type ics_topo_path_type(const ics_topo *t, int a, int b);

/* What NCCL's environment changes in the choice of paths; -1 in a field: NCCL's default. */
#define ICS_TOPO_IB_HCA_MAX 512
typedef struct {
    int p2p_level;   /* NCCL_P2P_LEVEL / NCCL_P2P_DISABLE (LOC): GPUs closer than or at this type
                        talk peer to peer, the rest through host memory (SHM) */
    int gdr_level;   /* NCCL_NET_GDR_LEVEL: GPU and NIC at most this far use GPUDirect RDMA */
    int gdr_read;    /* NCCL_NET_GDR_READ: 0 off, 1 on for sends too */
    int qps;         /* NCCL_IB_QPS_PER_CONNECTION: queue pairs a connection spreads its messages
                        over, each hashed onto the fabric on its own (route.c); 0 or 1: one */
    int pxn_disable; /* NCCL_PXN_DISABLE: 1 sends every GPU's traffic out of its own NIC; 0
                        (default) lets it leave by the destination's rail through an NVLink
                        peer (PXN, route.c) */
    /* NCCL_IB_HCA as set ("" unset): the NICs NCCL's IB transport opens, in NCCL's syntax
     * (topo_hca.c); the others carry nothing. A list that keeps none of a node's compute NICs
     * is ignored (ics_topo_ib_hca_ignored) */
    char ib_hca[ICS_TOPO_IB_HCA_MAX];
} ics_topo_paths;

/* Sets the rules the routes follow from now on (the defaults until called). */
void ics_topo_set_paths(ics_topo *t, const ics_topo_paths *p);
/* Whether the rules' NCCL_IB_HCA is set but keeps none of a node's compute NICs, and is
 * therefore not applied (NCCL would then find no IB device and fall back to its socket
 * transport, which icsim does not model). */
bool ics_topo_ib_hca_ignored(const ics_topo *t);
/* Whether the rules' NCCL_IB_HCA keeps the node's i-th NIC (0 <= i < ics_topo_nics_per_node;
 * true when unset or ignored). */
bool ics_topo_ib_hca_keeps(const ics_topo *t, int nic_index);
/* Whether GPUs a and b of one node use peer-to-peer (P2P transport), as ncclTopoCheckP2p
 * decides: both GPUs allow it and their path type is within the P2P level (default SYS; PXB
 * on Intel and Arm hosts). Otherwise their traffic goes through host memory (SHM). */
bool ics_topo_uses_p2p(const ics_topo *t, int a, int b);
/* Whether GPU `gpu` and NIC `nic` of one node use GPUDirect RDMA, as ncclTopoCheckGdr decides
 * (send: the NIC reads the GPU's memory); otherwise the network's buffers sit in host memory
 * next to the GPU. */
bool ics_topo_uses_gdr(const ics_topo *t, int gpu, int nic, bool send);
/* Whether NIC `nic` reads GPU `gpu`'s memory by GPUDirect RDMA through PCIe switches alone:
 * at most PXB away (PHB through its own CPU on a C2C GPU, NCCL's P2C). Such a GPU sends by that
 * NIC itself, and may relay for its NVLink peers (NCCL's PXN, paths.cc, NCCL_PXN_C2C's
 * default). */
bool ics_topo_pcie_sends(const ics_topo *t, int gpu, int nic);

/* Routes between devices: which channels a transfer crosses, and how it splits when the
 * hardware stripes it. Rules, in order:
 *   - two GPUs of a node that do not use P2P (ics_topo_uses_p2p): through host memory next to
 *     the destination, as NCCL's SHM transport (each up its PCIe tree to its host bridge, the
 *     memory channels, the socket link between sockets);
 *   - two GPUs with a direct NVLink bond: that bond (parallel links are one bonded channel);
 *   - two GPUs on one NVSwitch fabric: one path per switch the source is wired to, weighted by
 *     its link count (GPUs spray packets over all their NVLinks), switch-to-switch hops taken
 *     by shortest path where a board boundary is crossed (DGX-2);
 *   - otherwise inside a node: up the PCIe tree to the lowest common switch or host bridge,
 *     through the root complex, across sockets when the NUMA nodes differ;
 *   - across nodes: to the NIC on the destination's rail, that of the node's GPU with the
 *     destination's local index, directly where the source is at most PXB from it, else over
 *     NVLink through that GPU (NCCL's PXN), or where neither applies to one of the source GPU's
 *     own nearest compute NICs (by the flow hash when it has several, the same index at both
 *     ends; its own rail first) (ics_route_send_nic), up the fat-tree
 *     only as far as needed (up/down routing: loop-free by construction), one spine and core
 *     chosen by a flow hash (ECMP), down to the destination's NIC, then its PCIe tree; a GPU
 *     and its NIC without GPUDirect RDMA (ics_topo_uses_gdr) meet in the GPU's host memory. */

#define ICS_ROUTE_MAX_HOPS 32

typedef struct {
    double weight; /* share of the bytes; the paths of a route sum to 1 */
    int n_hops;
    int chans[ICS_ROUTE_MAX_HOPS];
} ics_route_path;

typedef struct {
    int n_paths;
    ics_route_path *paths; /* owned; free with ics_route_clear */
    int room;              /* paths allocated (route.c) */
} ics_route;

/* Computes the route from device src to device dst (both GPUs or NICs; same device: no
 * paths). flow_hash picks among equal-cost fabric paths. Returns false if dst is unreachable,
 * which a validated model never produces for GPUs. Transfer full into *out. */
bool ics_route_find(const ics_topo *t, int src, int dst, uint64_t flow_hash, ics_route *out);
/* The same into a route already held (or zeroed), whose paths it replaces in the room it has:
 * for a caller that builds one route after another (net_routes.c, which builds millions when
 * its memo does not pay) and would otherwise allocate and free each. */
bool ics_route_find_again(const ics_topo *t, int src, int dst, uint64_t flow_hash, ics_route *r);
void ics_route_clear(ics_route *r);

/* The NIC a send from src to dst (on another node) leaves by: dst's rail where NCCL keeps it
 * there (route.c says when), else src's own; *via = the GPU whose memory it reads (src, or the
 * PXN relay on that rail). */
int ics_route_send_nic(const ics_topo *t, int src, int dst, uint64_t flow_hash, int *via);
/* The compute NIC a GPU uses to leave its node: the nearest by PCIe path class, ties broken
 * by rail == GPU index, then by NIC order. -1 if the node has no compute NIC. */
int ics_route_nic_of_gpu(const ics_topo *t, int gpu_dev);
/* Every compute NIC at that nearest class (4 EFA per GPU on a p5), ics_route_nic_of_gpu's
 * first, into out (room for ICS_ROUTE_MAX_NICS); their count. A GPU's transfers across nodes
 * pick among them by flow hash (see "Routes"). */
#define ICS_ROUTE_MAX_NICS 16
int ics_route_nics_of_gpu(const ics_topo *t, int gpu_dev, int *out);

/* A flow hash that also says which of a GPU's nearest NICs to leave by: the k-th of them (mod
 * their count) at both ends. ECMP hashes only the low 48 bits, `hash`'s own; a hash without a
 * NIC slot picks the NIC by its value. */
#define ICS_ROUTE_HASH_BITS 48
static inline uint64_t ics_route_ecmp_bits(uint64_t hash)
{
    return hash & ((UINT64_C(1) << ICS_ROUTE_HASH_BITS) - 1);
}
static inline uint64_t ics_route_flow(uint64_t hash, int nic_slot)
{
    return ics_route_ecmp_bits(hash) | ((uint64_t)(nic_slot + 1) << ICS_ROUTE_HASH_BITS);
}

/* Sum of hop latencies: channel latencies plus the latency of each intermediate device. */
ics_time ics_route_path_latency(const ics_topo *t, const ics_route_path *p);
/* The smallest channel bandwidth on a path. */
uint64_t ics_route_path_bw(const ics_topo *t, const ics_route_path *p);
/* A route's bandwidth: its paths' added (NVSwitch striping, queue pairs), but no more than a
 * channel several of them cross carries at their summed share (after a PXN relay: its PCIe,
 * the NIC, the fabric). */
uint64_t ics_route_bw(const ics_topo *t, const ics_route *r);

#endif
