// Cohort for libtorch: collectives on at::Tensor, DistributedOptimizer, broadcast of parameters,
// optimizer state and objects, and TorchState for elastic training. Link Cohort::torch.
#pragma once

#include "cohort/cohort.h"
#include "cohort/elastic/run.h"
#include "cohort/torch/broadcast.h"
#include "cohort/torch/collectives.h"
#include "cohort/torch/optimizer.h"
#include "cohort/torch/state.h"
