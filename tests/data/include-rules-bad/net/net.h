/* planted: fine */
#include "core/core.h"
