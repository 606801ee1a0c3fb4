/* Training scenarios: a JSON file naming a system, a model and a parallel layout, what
 * `icsim train SCENARIO.json` runs (docs/scenario-format.md). Command-line options override
 * the file's values. */
#ifndef ICS_SCENARIO_H
#define ICS_SCENARIO_H

#include <glib.h>

#include "workload/layout.h"
#include "workload/model.h"

typedef struct {
    char *system;    /* hardware model path, resolved against the scenario's directory */
    int nodes;       /* 0: as many as the layout needs */
    bool have_model; /* model set */
    ics_model model;
    ics_layout layout;
    bool layout_dp;           /* layout.dp given (else: every GPU the system has) */
    char *engine;             /* NULL: the default */
    bool have_host_launch;    /* host_launch_us given */
    double host_launch_us;    /* the host's time per kernel launch (replay.h) */
    int *chunk_layout;        /* owned: layout.chunk_layout's array, from $.layout.
                                 pipeline_model_parallel_layout (NULL: none) */
    char *chunk_layout_where; /* owned: where the file gave it (layout.chunk_layout_name) */
    /* Where the file gave each field, as its errors name it ("FILE:LINE:COL: $.layout.tp",
     * ics_jr_where), for checks made once the command line's values are merged in; NULL: not
     * given by the file. */
    char *model_where[ICS_MODEL_FIELD_COUNT];
    char *layout_where[ICS_LAYOUT_FIELD_COUNT];
} ics_train_scenario;

/* The most microseconds a kernel launch may take the host ("host_launch_us", --host-launch-us). */
#define ICS_SCENARIO_HOST_LAUNCH_US_MAX 1e6

/* A scenario's (and the command line's) node count: 1..ICS_SCENARIO_NODES_MAX, the hardware
 * loader's bound on a cluster's size. */
#define ICS_SCENARIO_NODES_MAX (1 << 20)

/* Starts every field at its default (ics_layout_defaults but folded, no system, no model). */
void ics_train_scenario_init(ics_train_scenario *s);
void ics_train_scenario_clear(ics_train_scenario *s);

/* Reads a scenario file; models by name come from `catalog`. False with *err (domain
 * ICS_JSON_ERROR, "file:line:col: $.path: expected ..., got ..."; ICS_ERROR_INPUT for a model
 * whose fields clash, located the same way) on bad input; unknown keys are errors. Every field
 * is checked against the ranges of model.h and layout.h, as the command line's options are. */
bool ics_train_scenario_load(const char *path, const ics_model_catalog *catalog,
                             ics_train_scenario *s, GError **err);

#endif
