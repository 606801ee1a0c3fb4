/* libicsim's face: the one header an embedder includes. It brings every module's face, in the
 * order data flows (docs/ARCHITECTURE.md):
 *
 *   hw          a hardware model read from JSON (hw.h)          ics_hw_load
 *   topo        its devices, one-way channels and routes        ics_topo_new, ics_route_find
 *   net         a network backend moving bytes over them        ics_net_backend, ics_net_*
 *   collectives NCCL's algorithms, tuner and communicators      ics_comm_new, ics_comm_run
 *   trace       every rank's ops, read from JSON or Chakra      ics_trace_read
 *   workload    models, layouts and the training-step generator ics_workload_build
 *   replay      a trace played on one engine and one network    ics_replay_new, ics_replay_run
 *   report      nccl-tests tables, step reports, timelines      ics_report_*
 *
 * core (time, the event queue and engine, data types, errors), links and switch come with them.
 * Everything returned is owned as each header says; errors are GErrors (core/error.h). The
 * command line (sim/cli/) is one user of this header among others. */
#ifndef ICS_ICSIM_H
#define ICS_ICSIM_H

#include "core/core.h"
#include "hw/hw.h"
#include "links/link.h"
#include "topo/topo.h"
#include "switch/switch.h"
#include "net/net.h"
#include "collectives/comm.h"
#include "trace/trace.h"
#include "workload/workload.h"
#include "replay/replay.h"
#include "report/report.h"

#endif
