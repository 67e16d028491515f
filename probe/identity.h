// Who this process is (see docs/probe.md, "Identity"): the shared launcher
// resolution, lenient as the probe must be: unusable launcher variables and
// a missing job id become warnings and the job runs on.
#pragma once

#include <string>
#include <vector>

#include "ringside/launcher_identity.h"

namespace ringside::probe {

using Identity = LauncherIdentity;
using ringside::EnvLookup;

struct IdentityResult {
  Identity identity;  // rank -1: the first communicator's rank is used
  std::vector<std::string> warnings;
};

// `job_override` / `node_override` are RINGSIDE_JOB_ID / RINGSIDE_NODE_NAME
// (empty when unset); `hostname` is gethostname().  Without a job id the
// traces are named after job 'local'.
IdentityResult resolve_identity(const EnvLookup& env, const std::string& job_override,
                                const std::string& node_override, const std::string& hostname);

}  // namespace ringside::probe
