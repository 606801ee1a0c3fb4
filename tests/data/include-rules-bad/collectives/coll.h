/* planted: the vocabulary reaches the network */
#include "net/net.h"
