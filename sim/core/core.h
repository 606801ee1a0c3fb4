/* The simulation core, the face every other module includes: integer-picosecond time
 * (time.h), the event queue (evq.h), the engine that runs it (engine.h), the numeric data types
 * (dtype.h), the error domain of user input (error.h) and the memory budget (budget.h). JSON
 * reading (json.h) is core's second face, for the readers only: nothing downstream sees cJSON. */
#ifndef ICS_CORE_H
#define ICS_CORE_H

#include "core/time.h"
#include "core/evq.h"
#include "core/engine.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/budget.h"

#endif
