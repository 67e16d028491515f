// Host functions of NCCL's device API (nccl_device.h: device communicators, teams,
// barriers). They only make sense with GPU kernels, which the sim cannot run; they
// exist so that binaries referencing them still load, and each call fails loudly:
// ncclInvalidUsage, or -1 / an empty team, with the reason in ncclGetLastError.
#include <nccl.h>

#include <string>

#include "api_export.h"
#include "last_error.h"

using namespace ringside::sim::nccl;

namespace {

// Layout of nccl_device's ncclTeam_t (returned by value).
struct TeamValue {
  int nRanks, rank, stride;
};

ncclResult_t unsupported(const char* fn) {
  return fail(ncclInvalidUsage,
              std::string(fn) + " (NCCL device API) is not supported by the ringside sim");
}

}  // namespace

RINGSIM_API ncclResult_t pncclDevCommCreate(ncclComm_t, const void*, void*) {
  return unsupported("ncclDevCommCreate");
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclDevCommCreate, (ncclComm_t, const void*, void*));
RINGSIM_API ncclResult_t pncclDevCommDestroy(ncclComm_t, const void*) {
  return unsupported("ncclDevCommDestroy");
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclDevCommDestroy, (ncclComm_t, const void*));
RINGSIM_API ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t, TeamValue, int, void*,
                                                          void*) {
  return unsupported("ncclGinBarrierCreateRequirement");
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclGinBarrierCreateRequirement,
                   (ncclComm_t, TeamValue, int, void*, void*));
RINGSIM_API ncclResult_t pncclLsaBarrierCreateRequirement(TeamValue, int, void*, void*) {
  return unsupported("ncclLsaBarrierCreateRequirement");
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclLsaBarrierCreateRequirement, (TeamValue, int, void*, void*));
RINGSIM_API ncclResult_t pncclLLA2ACreateRequirement(int, int, void*, void*) {
  return unsupported("ncclLLA2ACreateRequirement");
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclLLA2ACreateRequirement, (int, int, void*, void*));
RINGSIM_API int pncclLLA2ACalcSlots(int, int) {
  unsupported("ncclLLA2ACalcSlots");
  return -1;
}
RINGSIM_WEAK_ALIAS(int, ncclLLA2ACalcSlots, (int, int));
RINGSIM_API int pncclTeamRankToWorld(ncclComm_t, TeamValue, int) {
  unsupported("ncclTeamRankToWorld");
  return -1;
}
RINGSIM_WEAK_ALIAS(int, ncclTeamRankToWorld, (ncclComm_t, TeamValue, int));
RINGSIM_API int pncclTeamRankToLsa(ncclComm_t, TeamValue, int) {
  unsupported("ncclTeamRankToLsa");
  return -1;
}
RINGSIM_WEAK_ALIAS(int, ncclTeamRankToLsa, (ncclComm_t, TeamValue, int));
RINGSIM_API TeamValue pncclTeamWorld(ncclComm_t) {
  unsupported("ncclTeamWorld");
  return TeamValue{0, -1, 0};
}
RINGSIM_WEAK_ALIAS(TeamValue, ncclTeamWorld, (ncclComm_t));
RINGSIM_API TeamValue pncclTeamLsa(ncclComm_t) {
  unsupported("ncclTeamLsa");
  return TeamValue{0, -1, 0};
}
RINGSIM_WEAK_ALIAS(TeamValue, ncclTeamLsa, (ncclComm_t));
RINGSIM_API TeamValue pncclTeamRail(ncclComm_t) {
  unsupported("ncclTeamRail");
  return TeamValue{0, -1, 0};
}
RINGSIM_WEAK_ALIAS(TeamValue, ncclTeamRail, (ncclComm_t));
