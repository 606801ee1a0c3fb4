/* NCCL's point-to-point batches: which of an all-to-all's sends run at once (p2p_waves.c).
 * Not a public header: direct.c uses it. */
#ifndef ICS_P2P_WAVES_H
#define ICS_P2P_WAVES_H

#include "collectives/algo.h"

typedef struct ics_p2p_waves ics_p2p_waves;

/* The waves of an all-to-all over the context's ranks, its sends on c->nch of the
 * c->p2p_channels channels each; one wave where a caller's own kernel sends (c->req.sms > 0) or
 * no channel count is given. Free with ics_p2p_waves_free. */
ics_p2p_waves *ics_p2p_waves_new(const ics_algo_ctx *c);
void ics_p2p_waves_free(ics_p2p_waves *w);

/* How many waves (1: every send runs at once, as before NCCL's batches mattered). */
int ics_p2p_waves_count(const ics_p2p_waves *w);
/* The wave of rank a's send to rank b (indices into the context's ranks, a != b): the batch
 * of the channels its round runs on. The same for a's send and b's matching receive. */
int ics_p2p_waves_of(const ics_p2p_waves *w, int a, int b);
/* The rounds of a wave (NCCL's round indices; round 0 is a rank's copy to itself): sets
 * *rounds (owned by w) and returns their count. */
int ics_p2p_waves_rounds(const ics_p2p_waves *w, int wave, const int **rounds);
/* The rank that rank a sends to in a round. */
int ics_p2p_waves_receiver(const ics_p2p_waves *w, int a, int round);

#endif
