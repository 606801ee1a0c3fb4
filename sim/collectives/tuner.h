/* The tuner (tuner.c): NCCL's choice of algorithm, protocol and channels, and the
 * efficiencies the simulation applies to the chosen combination. */
#ifndef ICS_TUNER_H
#define ICS_TUNER_H

#include "coll.h"

typedef struct {
    const ics_topo *t;
    const int *ranks;
    int n;
    const char *arch;
    double ring_gbps;            /* slowest neighbour route of the rank-order ring, GB/s */
    int ring_class;              /* its slowest link class: 0 NVLink, 1 PCI, 2 network */
    double kernel_eff;           /* NCCL kernels' NVLink rate over our links' payload rate */
    uint64_t reduce_bytes_per_s; /* GPU memory bandwidth */
} ics_tuner;

void ics_tuner_init(ics_tuner *tu, const ics_topo *t, const int *ranks, int n);
/* Wire bytes per payload byte for a combination (protocol, kernel, NVLS traffic). */
double ics_tuner_wire_factor(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto);
ics_time ics_tuner_base_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto);
ics_time ics_tuner_step_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto);
/* The fastest allowed combination by NCCL's cost model; false if none applies. */
bool ics_tuner_pick(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                    bool (*supports)(const ics_tuner *, ics_coll_algo, const ics_coll_req *),
                    ics_coll_algo *algo, ics_coll_proto *proto);
int ics_tuner_channels(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                       ics_coll_algo algo);

#endif
