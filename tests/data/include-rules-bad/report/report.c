/* planted: a module that is not a face, an internal header, and cli */
#include "net/net_internal.h"
#include "cli/cli.h"
#include "trace/trace.h"
#include "hw/hw.h"
#include "net/route.h"
