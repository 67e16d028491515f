// NCCL datatypes and reduction operators on host memory. Low-precision types
// (half, bfloat16, fp8) are converted to float, combined, and rounded back with
// CUDA's own host conversions, which matches the GPU's per-operation rounding.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>

namespace ringside::sim::nccl {

// Bytes per element; 0 for an invalid datatype.
size_t datatype_size(ncclDataType_t type);
bool datatype_valid(ncclDataType_t type);
bool datatype_is_integer(ncclDataType_t type);
const char* datatype_name(ncclDataType_t type);
// The name NCCL gives a profiler plugin ("ncclFloat32").
const char* nccl_datatype_string(ncclDataType_t type);

// A reduction resolved for one collective: built-in sum/prod/max/min, or
// pre-multiplied sum (ncclAvg on floating types, ncclRedOpCreatePreMulSum), or
// sum followed by a division (ncclAvg on integer types), as NCCL does.
struct Reduction {
  enum class Kind : uint8_t { kSum, kProd, kMax, kMin, kPreMulSum, kSumPostDiv };
  Kind kind = Kind::kSum;
  double scalar = 1.0;   // kPreMulSum: the multiplier, before rounding to the datatype
  uint64_t divisor = 1;  // kSumPostDiv
};

// dst[i] = dst[i] (op) src[i] for the combining part of `r` (sum for the pre/post kinds).
void reduce_into(void* dst, const void* src, size_t count, ncclDataType_t type, const Reduction& r);
// dst[i] = a[i] (op) b[i]; dst may alias a or b.
void reduce_pair(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
                 const Reduction& r);
// The per-rank preparation of an input: dst[i] = src[i] * scalar for kPreMulSum, else a copy.
void prepare_input(void* dst, const void* src, size_t count, ncclDataType_t type,
                   const Reduction& r);
// The final step: dst[i] /= divisor for kSumPostDiv, else nothing.
void finish_output(void* dst, size_t count, ncclDataType_t type, const Reduction& r);

// The value of one element of `type` at `p`, as a double (pre-mul-sum scalars).
double load_scalar(const void* p, ncclDataType_t type);

}  // namespace ringside::sim::nccl
