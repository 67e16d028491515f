// The command a person should run next to confirm or act on a finding.
#pragma once

#include <string>
#include <vector>

#include "detect/context.h"

namespace ringside::analysis {

std::string next_command_for_straggler(const Context& ctx, int64_t rank);
std::string next_command_for_node_straggler(const Context& ctx, const std::string& node);
std::string next_command_for_imbalance(const Context& ctx, bool structural);
std::string next_command_for_link(const Context& ctx, const std::vector<std::string>& nodes);
// Two GPUs of one node: a send/recv test between exactly those devices.
std::string next_command_for_gpu_pair(const std::string& node, int gpu_a, int gpu_b);
std::string next_command_for_hang(const Context& ctx, const Finding& f);
std::string next_command_for_abnormal_end(const Context& ctx);
std::string next_command_for_desync(const Context& ctx, const Finding& f);
std::string next_command_for_gpu(const Context& ctx, const Finding& f);

}  // namespace ringside::analysis
