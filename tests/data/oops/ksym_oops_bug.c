// SPDX-License-Identifier: GPL-2.0
#define KSYM_OOPS_MODE 1
#include "ksym_oops.h"
