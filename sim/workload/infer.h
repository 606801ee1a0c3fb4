/* Inference of a transformer on one instance of tp x pp GPUs, as serving engines run a static
 * batch: a prefill of every request's prompt, then one decode step per output token, each step a
 * forward pass of every layer with two tensor-parallel all-reduces (after attention and after
 * the MLP; engines do not use sequence parallelism here), the pipeline stages one after the
 * other with the activations sent between them. Mixture-of-experts layers route each token to
 * its top-k experts, either split over the tensor-parallel GPUs like a dense MLP or, with
 * expert parallelism (ep = tp, vLLM's --enable-expert-parallel), whole experts spread over them;
 * either way the layer ends in the same all-reduce, since every GPU holds every token. This file
 * prices the compute of each pass with the GPU compute model (compute.h) and says which all-reduces
 * it makes; the caller times those on the machine's links (`icsim infer`, cli_infer.c), so the
 * network model stays the collectives module's. docs/workload.md, "Inference", gives every term. */
#ifndef ICS_INFER_H
#define ICS_INFER_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/hw.h"
#include "workload/model.h"

typedef struct {
    int tp;          /* tensor-parallel GPUs of a pipeline stage */
    int pp;          /* pipeline stages (1: none) */
    int ep;          /* expert-parallel GPUs: 1 (experts split over tp) or tp */
    int batch;       /* requests decoded together */
    int input;       /* prompt tokens per request */
    int output;      /* generated tokens per request */
    ics_dtype dtype; /* weights and GEMMs: bf16, fp16 or fp8; activations and KV cache 16-bit */
} ics_infer_layout;

/* One forward pass of one layer on one GPU, and the pass's all-reduces. */
typedef struct {
    double tokens;            /* rows the GEMMs see (batch x prompt in prefill, batch in decode) */
    ics_time layer_ps;        /* the compute of one dense layer, every kernel with its launch */
    ics_time moe_layer_ps;    /* the same for a mixture-of-experts layer (0: a dense model) */
    ics_time head_ps;         /* final norm and logits (the last token of each request) */
    uint64_t allreduce_bytes; /* each of the layer's two all-reduces (tokens x hidden, 16-bit),
                                 also what a stage sends the next */
} ics_infer_pass;

typedef struct {
    ics_infer_pass prefill;       /* the prompts */
    ics_infer_pass decode;        /* one output token, at the mean context (prompt + output / 2) */
    int dense_layers, moe_layers; /* of the whole model */
    double weight_bytes;          /* per GPU, on the stage that holds the most */
    double kv_bytes; /* per GPU, the whole batch at its longest context, on that stage */
} ics_infer_plan;

/* Whether the layout can run: tp, pp, ep, batch, input and output >= 1; pp at most the layers;
 * ep 1 or tp, and then a divisor of the experts of a MoE model; tp divides the heads and the
 * MLP (each expert's, with experts split over tp), and divides or is a multiple of the KV heads;
 * the GPU has tensor cores for the dtype (fp8 needs an fp8 peak); batch x (input + output) at most
 * 2^31 tokens and a prefill all-reduce at most 1 TiB. False and *error: "--tp: expected a divisor
 * of the model's heads (64), got 3" (ICS_ERROR_INPUT), or ICS_ERROR_LIMIT for the two bounds. */
bool ics_infer_check(const ics_model *m, const ics_infer_layout *l, const ics_hw_gpu_type *g,
                     GError **error);

/* An inference scenario (docs/scenario-format.md): what `icsim infer SCENARIO.json` runs, the
 * options' fields in a file; options given on the command line override it. */
typedef struct {
    char *system; /* hardware model, resolved against the scenario's directory */
    char *model;  /* a model of the catalog */
    char *engine; /* NULL: the default */
    ics_infer_layout layout;
    bool given[7]; /* tp, batch, input, output, pp, ep, dtype: set by the file */
} ics_infer_scenario;

/* Reads a scenario; false with *err ("file:line:col: $.path: expected ..., got ...", domain
 * ICS_JSON_ERROR) on bad input, unknown keys included. Clear it after, loaded or not. */
bool ics_infer_scenario_load(const char *path, ics_infer_scenario *s, GError **err);
void ics_infer_scenario_clear(ics_infer_scenario *s);

/* The plan of a checked layout on GPU type g. */
void ics_infer_plan_make(const ics_model *m, const ics_infer_layout *l, const ics_hw_gpu_type *g,
                         ics_infer_plan *out);

#endif
