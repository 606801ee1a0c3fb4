/* planted: another module's internal header */
#include "net/net_internal.h"
