/* GPU memory of a training layout, per GPU, as Megatron-LM holds it: the weights, gradients and
 * optimizer state of the GPU's share of the model, the activations its pipeline stage keeps for
 * the micro-batches in flight, and NCCL's buffers. Closed forms, documented term by term in
 * docs/workload.md ("Memory per GPU"):
 *   - model state, bytes per parameter (Megatron-LM's distributed-optimizer guide): 16-bit
 *     weights 2, gradients 4 in fp32 (2 when reduced in 16 bits), fp32 master weights and Adam's
 *     two moments 12, divided over the data-parallel replicas with --dist-opt;
 *   - activations per layer and micro-batch, generalized from Korthikanti et al., "Reducing
 *     Activation Recomputation in Large Transformer Models" (MLSys 2023), Table 2: 34 s b h +
 *     5 a s^2 b bytes for GPT, of which 24 s b h + 5 a s^2 b shard over tensor parallelism
 *     and the other 10 s b h only with sequence parallelism;
 *   - micro-batches in flight on a stage: Megatron's 1F1B warm-up (interleaved: its warm-up of
 *     model chunks), so the first stage keeps L x (1 + (p - 1) / (p v)) layers' worth.
 * Nothing here is fitted: every published layout of validate/data/training fits its GPU by
 * these figures (tests/test_memory.c). */
#ifndef ICS_MEMORY_H
#define ICS_MEMORY_H

#include <stdint.h>

#include "workload/layout.h"
#include "workload/model.h"

typedef struct ics_memory {
    int stage;          /* the pipeline stage (0-based) these figures are for */
    double params;      /* parameters held (the stage's share, this tensor-parallel rank's) but
                           a MoE model's routed experts, which weights, grads and optimizer
                           count too */
    double weights;     /* bytes of 16-bit weights */
    double grads;       /* bytes of gradients (the layout's gradient type) */
    double optimizer;   /* bytes of fp32 master weights and Adam's moments (/ dp with dist-opt) */
    double activations; /* bytes of activations kept for backward at the stage's peak */
    double in_flight;   /* micro-batches (of one model chunk) whose activations that counts */
    double nccl;        /* bytes of NCCL's buffers (docs/workload.md) */
    double total;       /* the sum */
} ics_memory;

/* Per-layer activations of one micro-batch on one GPU, bytes, for the layout's tensor and
 * sequence parallelism, attention kind and recomputation (the layer's stored part; with full
 * recomputation only its input). */
double ics_memory_layer_activations(const ics_model *m, const ics_layout *l);

/* The figures of stage `stage` (0 .. pp - 1). Model and layout must be valid (ics_model_check,
 * ics_layout_check). */
void ics_memory_of_stage(const ics_model *m, const ics_layout *l, int stage, ics_memory *out);

/* The stage that needs the most, of every stage (usually the first or the last: embedding and
 * most micro-batches in flight, or the output layer and its logits; a middle one with uneven
 * stages or a MoE model's dense first layers). */
void ics_memory_peak(const ics_model *m, const ics_layout *l, ics_memory *out);

#endif
