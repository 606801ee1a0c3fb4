/* The network interface: how bytes cross the topology, whichever backend moves them. A backend
 * fills one ics_net_ops (listed once in net.c); collectives and replays only see this header.
 *
 * Primitives, all starting at the engine's current time:
 *   - send:      src device -> dst device, routed by topo.h's routes (NVSwitch striping, ECMP);
 *   - multicast: src -> a switch once, then the switch copies to every destination
 *                (NVLS multicast on NVSwitch gen3+, SHARP/IB multicast);
 *   - reduce:    every source sends its bytes to a switch, which reduces them at its reduction
 *                throughput and multicasts the result to every destination (NVLS / SHARP);
 *   - stream:    sends (legs) that move together at one rate, as the stages of a pipeline in
 *                steady state do: one channel of a ring or tree collective at scale, where
 *                playing every chunk would cost millions of events. A backend without its
 *                own model runs the legs as independent sends.
 * Each calls done(engine, ctx, tag) once, at the simulated time its last byte is delivered.
 *
 * Accounting shared by every backend, so that they agree where nothing contends:
 *   - a transfer moves in packets of `packet_bytes` of payload (default: the largest payload
 *     any hop of its path allows); on a hop whose standard carries less per packet, each packet
 *     is several link packets, each with that standard's overhead:
 *       wire(P, hop) = P + ceil(P / max_payload(hop)) * packet_overhead(hop)
 *   - a packet crosses a hop in latency(hop) + wire / bw(hop); a device forwards a packet once
 *     it has received all of it (virtual cut-through at packet granularity), after its own
 *     latency (switch, NIC);
 *   - so n equal packets on an idle path of hops h take
 *       sum_h (latency_h + device_h) + sum_h ser_h + (n - 1) * max_h ser_h
 *     which is `bytes / bottleneck bandwidth` plus the per-packet overheads and the pipeline
 *     fill: the closed form the tests check to the picosecond. */
#ifndef ICS_NET_H
#define ICS_NET_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "core/core.h"
#include "topo/topo.h"

typedef struct ics_net ics_net;

typedef void (*ics_net_done_fn)(ics_engine *e, void *ctx, uint64_t tag);

typedef struct {
    uint32_t packet_bytes;  /* payload per packet; 0: the path's largest link payload */
    uint64_t train_bytes;   /* packet backend: an uncontended transfer advances in trains of
                               up to this many bytes (0: 4 MiB) */
    uint32_t train_share;   /* packet backend, a flow whose path another flow shares: it takes
                               turns on its channels of 1/train_share of its packets (the last
                               turns halving; at least 4 packets, at most train_bytes) (0: 32) */
    bool per_packet;        /* packet backend: never form trains (every packet is an event);
                               for tests: a flow must be fewer than 2^32 packets */
    bool per_packet_shared; /* packet backend: trains only where a path is free; a flow sharing
                               a channel goes packet by packet (credits, arbitration; the same
                               2^32 bound) */
    uint32_t buffer_bytes;  /* per channel, at its receiving end; 0: the device kind's default */
    bool adaptive_routing;  /* fabric: pick the least-loaded spine instead of the flow hash */
    bool full_shares;       /* analytic backend: recompute the fair share at every start and
                               end, never take the shortcut (tests compare the two) */
    bool every_link;        /* flow backend: hand SimGrid every channel, chains in series
                               (net_series.c) and NVLink planes (merge_planes) too; tests
                               compare the two */
    bool merge_planes;      /* flow backend: hand SimGrid a GPU's NVLinks to a symmetric NVSwitch
                               domain as one link each way (net_planes.c). The caller's promise:
                               no reduce or multicast at an NVSwitch on this network (it would
                               load one plane alone). ics_sched_run sets it where its schedule
                               has none, unless every_link; the other backends ignore it */
} ics_net_params;

typedef struct {
    int src, dst; /* device ids */
    uint64_t bytes;
    uint64_t flow_hash; /* ECMP: transfers with equal hashes take the same fabric path */
    ics_net_done_fn done;
    void *ctx;
    uint64_t tag;
} ics_net_xfer;

/* One leg of a stream: src -> dst, `bytes` of it per stream. */
typedef struct {
    int src, dst;
    uint64_t bytes;
    uint64_t flow_hash;
} ics_net_leg;

typedef struct {
    uint64_t transfers;       /* completed */
    uint64_t bytes_delivered; /* payload */
    uint64_t packets;         /* packet-hops simulated one by one */
    uint64_t trains;          /* packet runs advanced as one train */
    uint64_t stalls;          /* times a ready packet waited for credits */
    uint64_t share_flows;     /* analytic: flows given a speed by a fair-share computation */
    uint64_t share_uses;      /* analytic: the resource uses those computations walked */
} ics_net_stats;

typedef struct ics_net_ops {
    const char *name;
    /* Memory one transfer under way takes on this backend, all told (its flow, routes and list
     * entries, and the schedule step that posted it), bytes: what an all-to-all's memory check
     * counts per pair (ics_comm_call_fits). Measured, peak RSS, on all-to-alls of 40 to 2,160
     * Polaris ranks, and rounded up: ~1.2 KB on the analytic and packet backends, ~2.8 KB on the
     * flow backend (its SimGrid communication). */
    unsigned transfer_bytes;
    /* The same per pair of an all-to-all played as streams (from ICS_STREAMS_AUTO_RANKS ranks:
     * each rank's sends as two streams, collectives.md "Plans"): its legs in the schedule, a
     * stream's merged uses and lists. Measured, peak RSS, and rounded up: ~270 B a pair on the
     * analytic backend (2,160 Polaris ranks 1.1 GB: ~240 B; 4,096 ranks of a SuperPOD 4.6 GB: ~270
     * B), ~1.05 KB on the flow backend (512 ranks). The packet backend plays a stream's legs as
     * sends: transfer_bytes. */
    unsigned stream_pair_bytes;
    /* NULL, or whether the backend can simulate topology t in this process (false: why, in
     * *err). Checked by ics_net_backend_ready before a run; create may assume it. */
    bool (*ready)(const ics_topo *t, GError **err);
    /* Creates the backend's state (transfer full). Never fails for a valid topology. */
    ics_net *(*create)(const ics_topo *t, ics_engine *e, const ics_net_params *p);
    void (*destroy)(ics_net *n);
    void (*send)(ics_net *n, const ics_net_xfer *x);
    void (*multicast)(ics_net *n, int src, int sw, const int *dsts, int ndst, uint64_t bytes,
                      ics_net_done_fn done, void *ctx, uint64_t tag);
    void (*reduce)(ics_net *n, const int *srcs, int nsrc, int sw, const int *dsts, int ndst,
                   uint64_t bytes, ics_net_done_fn done, void *ctx, uint64_t tag);
    /* NULL: the wrapper plays the legs as sends, done when the last is delivered. */
    void (*stream)(ics_net *n, const ics_net_leg *legs, int nlegs, ics_net_done_fn done, void *ctx,
                   uint64_t tag);
    /* Legs that are separate messages sent together (ics_net_batch); NULL: played as a stream. */
    void (*batch)(ics_net *n, const ics_net_leg *legs, int nlegs, ics_net_done_fn done, void *ctx,
                  uint64_t tag);
    void (*stats)(const ics_net *n, ics_net_stats *out);
    /* Payload bytes a channel has carried so far. */
    uint64_t (*chan_bytes)(const ics_net *n, int chan);
} ics_net_ops;

/* The backends, by name ("packet", "analytic", "flow"); NULL if unknown. */
const ics_net_ops *ics_net_backend(const char *name);
/* Whether `ops` can simulate t here (the flow backend: SimGrid's one platform per process, one
 * thread); false with the reason in *err (an ICS_ERROR_LIMIT error for the command line). */
bool ics_net_backend_ready(const ics_net_ops *ops, const ics_topo *t, GError **err);
/* Names of all backends, NULL-terminated (transfer none). */
const char *const *ics_net_backend_names(void);

/* Convenience wrappers: a backend instance remembers its ops. */
ics_net *ics_net_new(const ics_net_ops *ops, const ics_topo *t, ics_engine *e,
                     const ics_net_params *p);
void ics_net_free(ics_net *n);
void ics_net_send(ics_net *n, const ics_net_xfer *x);
void ics_net_multicast(ics_net *n, int src, int sw, const int *dsts, int ndst, uint64_t bytes,
                       ics_net_done_fn done, void *ctx, uint64_t tag);
void ics_net_reduce(ics_net *n, const int *srcs, int nsrc, int sw, const int *dsts, int ndst,
                    uint64_t bytes, ics_net_done_fn done, void *ctx, uint64_t tag);
void ics_net_stream(ics_net *n, const ics_net_leg *legs, int nlegs, ics_net_done_fn done, void *ctx,
                    uint64_t tag);
/* A batch: legs that are separate messages started together (an all-to-all's sends of a wave
 * by one NIC), done when the last is delivered. The fluid backends move it as a stream (one
 * rate); the packet backend sends the legs, their turns sized by the batch (net_packet.c). */
void ics_net_batch(ics_net *n, const ics_net_leg *legs, int nlegs, ics_net_done_fn done, void *ctx,
                   uint64_t tag);
/* A stream played as its legs' sends, done when the last is delivered: what ics_net_stream does
 * on a backend without a stream model, for a backend's own ops to build on. */
void ics_net_stream_as_sends(ics_net *n, const ics_net_leg *legs, int nlegs, ics_net_done_fn done,
                             void *ctx, uint64_t tag);
void ics_net_get_stats(const ics_net *n, ics_net_stats *out);
uint64_t ics_net_chan_bytes(const ics_net *n, int chan);

/* Every backend begins its state with this header (zeroed), so the wrappers can find the ops.
 * joins: net.c's streams under way on a backend without its own (freed by ics_net_free, when a
 * run stopped at the engine's horizon leaves some). */
typedef struct {
    const ics_net_ops *ops;
    struct ics_net_legs_join *joins;
} ics_net_base;

/* ---- accounting shared by the backends (net_common.c) ---- */

/* Payload per packet for a path (packet_bytes, or the largest max_payload of its hops). */
uint32_t ics_net_packet_payload(const ics_topo *t, const ics_route_path *p, uint32_t packet_bytes);
/* Wire bytes of a packet of `payload` bytes on a channel (see the header comment). */
uint64_t ics_net_wire_bytes(const ics_topo *t, int chan, uint64_t payload);
/* Serialization time of that packet on the channel. */
ics_time ics_net_ser(const ics_topo *t, int chan, uint64_t payload);
/* The last packet's delivery in a deterministic tandem of `nst` stages (serialization of a full
 * and of the last packet at each stage, then a delay before the next; the last delay is the
 * final latency), `n` packets all ready at stage 0. */
ics_time ics_net_tandem_time(int nst, const ics_time *s_full, const ics_time *s_last,
                             const ics_time *lambda, uint64_t n);
/* Time for `bytes` alone on an idle path, in packets of `payload` (the closed form above). */
ics_time ics_net_idle_path_time(const ics_topo *t, const ics_route_path *p, uint64_t bytes,
                                uint32_t payload);
/* In-switch reduction throughput of a device, bytes/s (0: the device cannot reduce). */
uint64_t ics_net_reduce_bw(const ics_topo *t, int dev);

#endif
