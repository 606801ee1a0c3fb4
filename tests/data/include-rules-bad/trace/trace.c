/* planted: a dependency that is not allowed */
#include "report/report.h"
