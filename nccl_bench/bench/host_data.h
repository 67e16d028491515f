// Host-side data for checking results without device kernels: the datatypes and
// reduction ops nccl_bench accepts (nccl-tests names), a typed codec, and the
// deterministic input generator every rank can evaluate for every other rank.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <span>
#include <string_view>

namespace ringside::bench {

struct DataType {
  ncclDataType_t nccl;
  const char* name;  // nccl-tests spelling, e.g. "float", "bfloat16"
  int size;          // bytes
  bool is_float;
};

// nccl-tests' "mulsum": a sum with a per-rank scalar (ncclRedOpCreatePreMulSum),
// created on each communicator for each call.  This value stands for it until then.
inline constexpr ncclRedOp_t kPreMulSum = ncclNumOps;

struct RedOp {
  ncclRedOp_t nccl;  // kPreMulSum for "mulsum"
  const char* name;  // nccl-tests spelling: "sum", "prod", "max", "min", "avg", "mulsum"
};

// nccl-tests names plus NCCL's aliases (float32, fp16, bf16, ...); nullptr if unknown.
const DataType* find_dtype(std::string_view name);
const DataType& dtype_of(ncclDataType_t type);
std::span<const DataType> all_dtypes();
const RedOp* find_redop(std::string_view name);
std::span<const RedOp> all_redops();
// "int8|uint8|..." for messages.
std::string_view dtype_choices();
std::string_view redop_choices();

// Writes `value` as element `index` of a `type` array (integers wrap like the device).
void store_value(ncclDataType_t type, void* base, size_t index, double value);
double load_value(ncclDataType_t type, const void* base, size_t index);
// `value` after a round trip through `type`.
double as_type(ncclDataType_t type, double value);

// Whether a received element equals the expected one; exact except where the
// reduction itself rounds (avg), which gets a tolerance.
bool values_match(const DataType& type, ncclRedOp_t op, double got, double expected);

// The scalar rank `rank` multiplies its input by in a "mulsum" (1 or 2: exact in
// every type).
double premul_scalar(int rank);

// Inputs chosen so that every reduction is exact in every datatype: sums of
// values in [0,3] ([0,1] for the 8-bit floats), one factor 2 per element for
// prod, values in [0,63] for min/max, [0,127] for data movement.  `rep` varies
// the data between checks.
struct InputGen {
  bool reduction = false;
  ncclRedOp_t op = ncclSum;  // or kPreMulSum
  int nranks = 1;
  int rep = 0;
  bool fp8 = false;  // an 8-bit float type: sums of 0 and 1 only
  double operator()(int rank, size_t index) const;
  // The reduction over all ranks of element `index`.
  double reduced(size_t index) const;
};

}  // namespace ringside::bench
