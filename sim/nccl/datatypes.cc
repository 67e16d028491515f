#include "datatypes.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace ringside::sim::nccl {
namespace {

// Low-precision storage types go through float; Conv gives load/store for each.
struct HalfConv {
  using Storage = uint16_t;
  static float load(Storage v) {
    __half_raw r;
    r.x = v;
    return __half2float(__half(r));
  }
  static Storage store(float f) { return __half_raw(__float2half_rn(f)).x; }
};
struct Bf16Conv {
  using Storage = uint16_t;
  static float load(Storage v) {
    __nv_bfloat16_raw r;
    r.x = v;
    return __bfloat162float(__nv_bfloat16(r));
  }
  static Storage store(float f) { return __nv_bfloat16_raw(__float2bfloat16_rn(f)).x; }
};
template <__nv_fp8_interpretation_t Kind>
struct Fp8Conv {
  using Storage = uint8_t;
  static float load(Storage v) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(v), Kind)));
  }
  // Saturating, as the GPU's fp8 reductions are.
  static Storage store(float f) { return __nv_cvt_float_to_fp8(f, __NV_SATFINITE, Kind); }
};
template <typename T>
struct NativeConv {
  using Storage = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};

template <typename Conv>
using Compute = std::conditional_t<std::is_same_v<Conv, NativeConv<typename Conv::Storage>>,
                                   typename Conv::Storage, float>;

template <typename Conv>
void combine(void* dst_v, const void* a_v, const void* b_v, size_t n, Reduction::Kind kind) {
  using S = typename Conv::Storage;
  using C = Compute<Conv>;
  auto* dst = static_cast<S*>(dst_v);
  const auto* a = static_cast<const S*>(a_v);
  const auto* b = static_cast<const S*>(b_v);
  switch (kind) {
    case Reduction::Kind::kProd:
      for (size_t i = 0; i < n; ++i) dst[i] = Conv::store(C(Conv::load(a[i]) * Conv::load(b[i])));
      return;
    case Reduction::Kind::kMax:
      for (size_t i = 0; i < n; ++i)
        dst[i] = Conv::store(std::max<C>(Conv::load(a[i]), Conv::load(b[i])));
      return;
    case Reduction::Kind::kMin:
      for (size_t i = 0; i < n; ++i)
        dst[i] = Conv::store(std::min<C>(Conv::load(a[i]), Conv::load(b[i])));
      return;
    default:  // sum, and the summing part of pre-mul-sum / sum-post-div
      for (size_t i = 0; i < n; ++i) dst[i] = Conv::store(C(Conv::load(a[i]) + Conv::load(b[i])));
      return;
  }
}

template <typename Conv>
void premul(void* dst_v, const void* src_v, size_t n, double scalar) {
  using S = typename Conv::Storage;
  using C = Compute<Conv>;
  auto* dst = static_cast<S*>(dst_v);
  const auto* src = static_cast<const S*>(src_v);
  // The scalar is first rounded to the datatype, as ncclRedOpCreatePreMulSum stores it.
  const C k = Conv::load(Conv::store(static_cast<C>(scalar)));
  for (size_t i = 0; i < n; ++i) dst[i] = Conv::store(C(Conv::load(src[i]) * k));
}

template <typename T>
void postdiv(void* dst_v, size_t n, uint64_t divisor) {
  auto* dst = static_cast<T*>(dst_v);
  const T d = static_cast<T>(divisor);
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(dst[i] / d);
}

// Calls f.template operator()<Conv>() for the datatype's converter.
template <typename F>
void dispatch(ncclDataType_t type, F&& f) {
  switch (type) {
    case ncclInt8:
      f.template operator()<NativeConv<int8_t>>();
      return;
    case ncclUint8:
      f.template operator()<NativeConv<uint8_t>>();
      return;
    case ncclInt32:
      f.template operator()<NativeConv<int32_t>>();
      return;
    case ncclUint32:
      f.template operator()<NativeConv<uint32_t>>();
      return;
    case ncclInt64:
      f.template operator()<NativeConv<int64_t>>();
      return;
    case ncclUint64:
      f.template operator()<NativeConv<uint64_t>>();
      return;
    case ncclFloat16:
      f.template operator()<HalfConv>();
      return;
    case ncclFloat32:
      f.template operator()<NativeConv<float>>();
      return;
    case ncclFloat64:
      f.template operator()<NativeConv<double>>();
      return;
    case ncclBfloat16:
      f.template operator()<Bf16Conv>();
      return;
    case ncclFloat8e4m3:
      f.template operator()<Fp8Conv<__NV_E4M3>>();
      return;
    case ncclFloat8e5m2:
      f.template operator()<Fp8Conv<__NV_E5M2>>();
      return;
    default:
      return;
  }
}

}  // namespace

size_t datatype_size(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

bool datatype_valid(ncclDataType_t type) {
  return datatype_size(type) != 0;
}

bool datatype_is_integer(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclInt32:
    case ncclUint32:
    case ncclInt64:
    case ncclUint64:
      return true;
    default:
      return false;
  }
}

const char* datatype_name(ncclDataType_t type) {
  static const char* const kNames[] = {"int8",   "uint8",    "int32",    "uint32",
                                       "int64",  "uint64",   "half",     "float",
                                       "double", "bfloat16", "fp8_e4m3", "fp8_e5m2"};
  int i = static_cast<int>(type);
  return (i >= 0 && i < ncclNumTypes) ? kNames[i] : "invalid";
}

const char* nccl_datatype_string(ncclDataType_t type) {
  static const char* const kNames[] = {"ncclInt8",     "ncclUint8",      "ncclInt32",
                                       "ncclUint32",   "ncclInt64",      "ncclUint64",
                                       "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
                                       "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  int i = static_cast<int>(type);
  return (i >= 0 && i < ncclNumTypes) ? kNames[i] : "Unknown";
}

void reduce_pair(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
                 const Reduction& r) {
  dispatch(type, [&]<typename Conv>() { combine<Conv>(dst, a, b, count, r.kind); });
}

void reduce_into(void* dst, const void* src, size_t count, ncclDataType_t type,
                 const Reduction& r) {
  reduce_pair(dst, dst, src, count, type, r);
}

void prepare_input(void* dst, const void* src, size_t count, ncclDataType_t type,
                   const Reduction& r) {
  if (r.kind == Reduction::Kind::kPreMulSum) {
    dispatch(type, [&]<typename Conv>() { premul<Conv>(dst, src, count, r.scalar); });
  } else if (dst != src) {
    std::memmove(dst, src, count * datatype_size(type));
  }
}

void finish_output(void* dst, size_t count, ncclDataType_t type, const Reduction& r) {
  if (r.kind != Reduction::Kind::kSumPostDiv) return;
  switch (type) {
    case ncclInt8:
      postdiv<int8_t>(dst, count, r.divisor);
      return;
    case ncclUint8:
      postdiv<uint8_t>(dst, count, r.divisor);
      return;
    case ncclInt32:
      postdiv<int32_t>(dst, count, r.divisor);
      return;
    case ncclUint32:
      postdiv<uint32_t>(dst, count, r.divisor);
      return;
    case ncclInt64:
      postdiv<int64_t>(dst, count, r.divisor);
      return;
    case ncclUint64:
      postdiv<uint64_t>(dst, count, r.divisor);
      return;
    default:
      return;  // floating types average by pre-multiplying instead
  }
}

double load_scalar(const void* p, ncclDataType_t type) {
  double v = 0;
  dispatch(type, [&]<typename Conv>() {
    typename Conv::Storage s;
    std::memcpy(&s, p, sizeof s);
    v = static_cast<double>(Conv::load(s));
  });
  return v;
}

}  // namespace ringside::sim::nccl
