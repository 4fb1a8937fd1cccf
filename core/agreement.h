// The settings every rank of a job must hold alike: those that change the wire protocol, the
// topology or which collectives init() and the data plane run (config_table's Scope::kAlike rows,
// listed in docs/environment.md). They are compared across the ranks at the job's first exchange,
// a digest of them in one small allgather; where they differ, every rank fails at once with the
// same error, naming each setting that differs and the ranks (and hosts) on each side, instead of
// a hang or a garbled address later in init().
#pragma once

#include <span>
#include <string>

#include "core/config.h"
#include "ops/backend.h"

namespace cohort {

// "NAME=value\n" for each of `config`'s alike settings, in the table's order.
std::string alike_settings(const Config& config);

// Compares `config`'s alike settings with every other rank's over `world`, the job's first
// collective. Throws InvalidArgument on every rank alike where they differ.
void check_agreement(ops::Backend& world, const Config& config);

// The error for ranks whose alike_settings() are `records` (rank order) on `hosts`: each setting
// whose value differs, with the ranks and hosts that hold each value; empty where all agree.
std::string describe_disagreement(std::span<const std::string> records,
                                  std::span<const std::string> hosts);

}  // namespace cohort
