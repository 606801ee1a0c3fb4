/* planted: compiles against net through coll.h */
#include "collectives/coll.h"
