// Builds the data-plane backend that the configuration asks for, joining the other ranks.
#pragma once

#include <memory>

#include "core/config.h"
#include "ops/backend.h"

namespace cohort {

std::unique_ptr<ops::Backend> make_backend(const Config& config);

}  // namespace cohort
