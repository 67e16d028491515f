#include "identity.h"

namespace ringside::probe {

IdentityResult resolve_identity(const EnvLookup& env, const std::string& job_override,
                                const std::string& node_override, const std::string& hostname) {
  LauncherIdentityResult found =
      resolve_launcher_identity(env, job_override, node_override, hostname);
  IdentityResult result{std::move(found.identity), {}};
  for (const std::string& p : found.problems) {
    // A bad step id loses only the step; any other problem the launcher's variables.
    const bool step = p.rfind("SLURM_STEP_ID=", 0) == 0;
    result.warnings.push_back(p + (step ? "; the trace is named without a step"
                                        : "; ignoring this launcher's variables"));
  }
  if (result.identity.job_id.empty()) {
    result.identity.job_id = "local";
    result.warnings.push_back(std::string("no job id (") + launcher_job_id_variables() +
                              "); using 'local', so a later run into the same directory "
                              "overwrites these traces");
  }
  return result;
}

}  // namespace ringside::probe
