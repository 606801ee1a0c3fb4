/* Megatron-Core's --pipeline-model-parallel-layout: which layers each virtual pipeline stage
 * holds, written as a string (docs/workload.md, "Pipeline layouts"). Stages are separated by
 * '|', in model order (virtual stage v = chunk x pp + pipeline rank, as interleaving numbers
 * them); each holds symbols: E the embedding, t a transformer (decoder) layer, L the output
 * layer and loss, m a multi-token-prediction layer. Commas are cosmetic; "X*N" repeats a symbol
 * and "(...)*N" a group. Beyond Megatron's one-pass expansion, groups may nest and spaces are
 * cosmetic too; stricter than Megatron, N is at least 1 and L must sit in the last stage.
 * DeepSeek-V3's H100 recipe (61 layers on 8 stages x 4 virtual stages) writes "Et|(tt|)*30mL": 1
 * layer with the embedding, 30 stages of 2, and a last stage with the MTP layer and the loss. */
#ifndef ICS_PP_LAYOUT_H
#define ICS_PP_LAYOUT_H

#include <glib.h>

/* The most virtual stages and symbols a layout expands to (a limit, ICS_ERROR_LIMIT): far past
 * any pipeline (pp x vp is at most 65536 x 1024 by the layout's own ranges, but a layout lists
 * each stage), small enough that expanding is instant. */
#define ICS_PP_LAYOUT_MAX_SYMBOLS (1 << 22)
/* The most multi-token-prediction layers (m) a layout holds (a limit): DeepSeek-V3 trains one,
 * and each is a whole decoder layer and output head on the last stage. */
#define ICS_PP_LAYOUT_MAX_MTP 16

/* The virtual stages of `text`, *n of them, as a new array of *n + 2 integers (g_free it):
 * element v the index of virtual stage v's first decoder layer, element *n the decoder layers
 * in all (so stage v holds element v + 1 minus element v), element *n + 1 the
 * multi-token-prediction layers (m). NULL with *error (ICS_ERROR_INPUT: "NAME: expected ..., got
 * ... at character C"; name NULL: no "NAME: "; ICS_ERROR_LIMIT past
 * ICS_PP_LAYOUT_MAX_SYMBOLS). Checked here, without the model or the layout: the symbols and the
 * grammar; E exactly once, first in the first stage; L exactly once, last in the last stage; m's
 * only right before L (Megatron-Core builds the MTP block after the decoder, before the loss).
 * The total and the stage count are the layout check's (layout.c). */
int *ics_pp_layout_parse(const char *text, const char *name, int *n, GError **error);

#endif
