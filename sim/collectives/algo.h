/* The algorithm interface: one file per algorithm fills one ics_algo_ops, listed once in
 * comm.c. An algorithm appends its steps for one call to a schedule; it never knows which
 * backend will play it. */
#ifndef ICS_ALGO_H
#define ICS_ALGO_H

#include "collectives/comm.h"
#include "collectives/comm.h"

/* Everything an algorithm needs for one call. */
typedef struct {
    const ics_topo *t;
    const int *ranks; /* device of each rank */
    int n;
    int ppn; /* ranks per node (NCCL's nRanks / nNodes) */
    ics_coll_req req;
    ics_coll_proto proto;
    int nch;           /* channels */
    int nvls_channels; /* NCCL's NVLS channels (ics_tuner_price.nvls_channels) */
    /* NCCL_NVLS_CHUNKSIZE and NCCL_NVLSTREE_MAX_CHUNKSIZE as set (0: NCCL's defaults): read
     * by nvls.c (nvls_chunk) and ics_algo_nvls_tree_chunk */
    uint64_t nvls_chunk, nvlstree_max_chunk;
    double wire_factor;          /* bytes on the wire per payload byte (protocol, kernel) */
    ics_time base_lat_ps;        /* launch + protocol start-up, once */
    ics_time step_lat_ps;        /* per step on the path (NCCL's per-hop latency) */
    uint64_t reduce_bytes_per_s; /* GPU reduction rate (HBM-bound) */
    /* A channel is one CTA (thread block): it copies at most cta_bytes_per_s, and after every
     * slice it sends it spends sync_ps making the data visible and posting a flag (channels.c);
     * the schedule charges both to the channel (ics_sched_set_floor, ics_sched_set_tail). */
    ics_time sync_ps;
    uint64_t cta_bytes_per_s;
    int ctas_per_channel; /* of NCCL's channels per simulated one (ics_tuner_ctas_per_channel) */
    /* Algorithms that mix link classes (tree, NVLS-Tree, CollNet, PAT) price each leg apart:
     * wire bytes per payload byte of a transfer inside a node (protocol, and NCCL's kernel
     * rate on NVLink), of one across the network (protocol), of an NVLS switch op (per byte
     * each GPU pushes: NVLS efficiency); and NCCL's per-hop latency across the network
     * (step_lat_ps is then the hop inside a node). */
    double intra_wire_factor, net_wire_factor, nvls_wire_factor;
    ics_time net_step_lat_ps;
    /* A ring's or a point-to-point send across the network waits the network plugin's latency
     * first (ics_tuner_price.net_msg_ps; 0 for NCCL's own transports): ics_algo_net_msg. */
    ics_time net_msg_ps;
    /* What posting a point-to-point send or receive across nodes costs the GPU's proxy thread,
     * which posts them one after another (ics_tuner_price.net_op_ps): direct.c. */
    ics_time net_op_ps;
    /* Wire bytes each message across the network adds, the transport's gap per message
     * (ics_tuner_price.net_msg_bytes; 0 unless calibrated): ics_algo_net_gap. */
    uint64_t net_msg_bytes;
    /* NCCL's point-to-point step (p2pChunkSize: ics_tuner_p2p_step) */
    uint64_t p2p_step;
    /* NCCL's point-to-point channels, all peers together (p2pnChannels: a power of two), over
     * which p2p_waves.c lays out an all-to-all's batches */
    int p2p_channels;
    int p2p_group; /* NCCL_P2P_SCHEDULE_GROUP_SIZE (0: NCCL's 8) */
    /* NCCL_BUFFSIZE as set (0: NCCL's 4 MiB): read through ics_algo_simple_step */
    uint64_t simple_buffsize;
} ics_algo_ctx;

typedef struct {
    ics_coll_algo algo;
    /* True if the algorithm can run this operation on these ranks. */
    bool (*supports)(const ics_algo_ctx *c);
    /* Appends the call's steps; the caller measures when the last ends. */
    void (*plan)(const ics_algo_ctx *c, ics_sched *s);
    /* The same call with each channel as one stream (ics_sched_stream) and its pipeline's fill
     * as delays: O(ranks) steps instead of O(ranks x chunks), for communicators of thousands
     * of ranks. NULL: the algorithm has only the chunk-level plan. */
    void (*plan_streams)(const ics_algo_ctx *c, ics_sched *s);
} ics_algo_ops;

extern const ics_algo_ops ics_algo_ring;
extern const ics_algo_ops ics_algo_nvls;
extern const ics_algo_ops ics_algo_direct;
extern const ics_algo_ops ics_algo_tree;
extern const ics_algo_ops ics_algo_nvls_tree;
extern const ics_algo_ops ics_algo_collnet_direct;
extern const ics_algo_ops ics_algo_collnet_chain;
extern const ics_algo_ops ics_algo_pat;

/* NCCL's Simple FIFO step: an eighth of its buffer (NCCL_BUFFSIZE; 4 MiB when the context
 * says 0), here at least 4 KiB: a Simple tree's chunk, a quarter of a Simple ring's. */
uint64_t ics_algo_simple_step(const ics_algo_ctx *c);
/* NCCL's tree chunk for the call (tree.c): the bytes one CTA moves per step, on `nnodes`
 * nodes. */
uint64_t ics_algo_tree_chunk(const ics_algo_ctx *c, int nnodes);
/* NCCL's NVLS-Tree chunk for the call (nvls_tree.c), on `nnodes` nodes of `heads` heads. */
uint64_t ics_algo_nvls_tree_chunk(const ics_algo_ctx *c, int nnodes, int heads);
/* Bytes to put on the wire for `payload` bytes under the context's protocol and kernel. */
uint64_t ics_algo_wire(const ics_algo_ctx *c, uint64_t payload);
/* Time for a GPU to reduce `bytes` (read two inputs, write one). */
ics_time ics_algo_reduce_time(const ics_algo_ctx *c, uint64_t bytes);
/* What `ctas` of the channel's CTAs take to copy `bytes` at their ceiling (0: no ceiling). */
ics_time ics_algo_cta_time(const ics_algo_ctx *c, uint64_t bytes, uint64_t ctas);
/* Charges a step moving `bytes` on `ctas` of NCCL's channels (CTAs) what channels.c says a CTA
 * costs: it ends no earlier than the CTAs' copy time (a floor) and `syncs` synchronizations
 * after its transfer (a tail). */
void ics_algo_charge(const ics_algo_ctx *c, ics_sched *s, int id, uint64_t bytes, uint64_t ctas,
                     ics_time syncs);
/* What is left of NCCL's per-hop latency `hop_ps` past the sender's synchronization, which the
 * send's tail already charges. */
ics_time ics_algo_beyond_sync(const ics_algo_ctx *c, ics_time hop_ps);
/* Wire bytes for `payload` on a leg of a mixed algorithm (factors above). */
uint64_t ics_algo_wire_by(double factor, uint64_t payload);
/* Time for `wire_bytes` to cross from rank a's device to rank b's on an idle network: their
 * serialization at the route's bandwidth (its paths added) plus, in *lat_ps, the first path's
 * latency. Stream plans price their pipeline fill with it. */
ics_time ics_algo_hop_time(const ics_algo_ctx *c, int a, int b, uint64_t wire_bytes,
                           ics_time *lat_ps);
/* Bytes of piece i of `total` split in `parts` (the last takes the remainder). */
uint64_t ics_algo_piece(uint64_t total, int parts, int i);

/* Whether ranks a and b (indices into ctx ranks) are on one node. */
bool ics_algo_same_node(const ics_algo_ctx *c, int a, int b);

/* What a ring's or a point-to-point send from rank a to rank b waits before it starts:
 * net_msg_ps where they are on two nodes, else 0. */
ics_time ics_algo_net_msg(const ics_algo_ctx *c, int a, int b);
/* A send's `wire` bytes from rank a to rank b with the transport's per-message gap: across nodes
 * net_msg_bytes more for each of its `messages` (at least one) of NCCL's network steps,
 * saturating; inside a node `wire` as it is. */
uint64_t ics_algo_net_gap(const ics_algo_ctx *c, int a, int b, uint64_t wire, uint64_t messages);

/* The communicator's nodes: ranks grouped by the node of their device, nodes in order of their
 * lowest rank, ranks in rank order inside each. Node k's ranks (indices into ctx ranks) are
 * rank[start[k] .. start[k + 1]). */
typedef struct {
    int nnodes;
    int *start; /* nnodes + 1, owned */
    int *rank;  /* n, owned */
} ics_algo_nodes;

/* Fills *g for ranks (devices) of t. Free its arrays with ics_algo_nodes_clear. O(n + the
 * topology's nodes). */
void ics_algo_nodes_init(const ics_topo *t, const int *ranks, int n, ics_algo_nodes *g);
void ics_algo_nodes_clear(ics_algo_nodes *g);
static inline int ics_algo_nodes_size(const ics_algo_nodes *g, int k)
{
    return g->start[k + 1] - g->start[k];
}

/* NCCL's double binary tree over m nodes (src/graph/trees.cc): in tree 0 node 0 is the root and
 * the others form a binary tree by the lowest set bit of their index; tree 1 is tree 0 mirrored
 * (k -> m-1-k) for even m, shifted by one (k -> k+1 mod m) for odd m, so that a leaf of one
 * tree is an inner node of the other. Node k's parent (-1 at the root) and children (-1: none)
 * in `tree` (0 or 1); child[0] below k's index in the tree's numbering, child[1] above. */
void ics_algo_dtree(int m, int tree, int k, int *parent, int child[2]);

/* The flow hash of a transfer of channel ch (x tells its transfers apart): what the fabric's
 * ECMP hashes, and which of a GPU's NICs the channel leaves by (topo.h, ics_route_flow): across
 * nodes channel ch leaves a node by local GPU (ch - 1) mod ppn, so the channels through one
 * GPU are ch / ppn apart, and take its NICs in turn (a p5's 4 EFA per GPU), as NCCL's graphs
 * give each channel its own NIC. */
uint64_t ics_algo_flow(const ics_algo_ctx *c, int ch, uint64_t x);

/* The compute NIC of each head: the local ranks of node k (in rank order) whose nearest NIC
 * no earlier rank of the node uses. Fills heads[] (rank indices) and nics[] (device ids, may be
 * NULL); returns the count (0 if the node has no compute NIC). */
int ics_algo_node_heads(const ics_topo *t, const int *ranks, const ics_algo_nodes *g, int k,
                        int *heads, int *nics);

#endif
