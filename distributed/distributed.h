#pragma once
// Multi-process training (docs/distributed.md): launcher environment, process groups, DDP.
#include "distributed/ddp.h"
#include "distributed/launch.h"
#include "distributed/process_group.h"
