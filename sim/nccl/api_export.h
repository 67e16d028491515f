// Export pattern of the real libnccl.so.2: every API function is a strong `pncclX`
// with a weak `ncclX` alias at the same address. Tools that interpose `ncclX`
// (the probe) can then still reach the library through `pncclX`.
#pragma once

#define RINGSIM_API extern "C" __attribute__((visibility("default")))

// Declares the weak public alias of a strong pncclX definition in the same file.
#define RINGSIM_WEAK_ALIAS(ret, name, params) \
  RINGSIM_API ret name params __attribute__((weak, alias("p" #name)))
