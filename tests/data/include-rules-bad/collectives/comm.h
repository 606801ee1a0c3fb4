/* planted: fine */
#include "collectives/coll.h"
