// Element access for every NCCL datatype in the test worker (host-side conversions
// from CUDA's headers), and the reference values each rank contributes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace ringside::test {

inline size_t type_size(ncclDataType_t t) {
  switch (t) {
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
    default:
      return 8;
  }
}

inline bool is_integer(ncclDataType_t t) {
  return t == ncclInt8 || t == ncclUint8 || t == ncclInt32 || t == ncclUint32 || t == ncclInt64 ||
         t == ncclUint64;
}
inline bool is_fp8(ncclDataType_t t) {
  return t == ncclFloat8e4m3 || t == ncclFloat8e5m2;
}

inline double get(ncclDataType_t t, const void* base, size_t i) {
  const char* p = static_cast<const char*>(base) + i * type_size(t);
  switch (t) {
    case ncclInt8:
      return *reinterpret_cast<const int8_t*>(p);
    case ncclUint8:
      return *reinterpret_cast<const uint8_t*>(p);
    case ncclInt32:
      return *reinterpret_cast<const int32_t*>(p);
    case ncclUint32:
      return *reinterpret_cast<const uint32_t*>(p);
    case ncclInt64:
      return static_cast<double>(*reinterpret_cast<const int64_t*>(p));
    case ncclUint64:
      return static_cast<double>(*reinterpret_cast<const uint64_t*>(p));
    case ncclFloat32:
      return *reinterpret_cast<const float*>(p);
    case ncclFloat64:
      return *reinterpret_cast<const double*>(p);
    case ncclFloat16: {
      __half_raw r;
      std::memcpy(&r.x, p, 2);
      return __half2float(__half(r));
    }
    case ncclBfloat16: {
      __nv_bfloat16_raw r;
      std::memcpy(&r.x, p, 2);
      return __bfloat162float(__nv_bfloat16(r));
    }
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: {
      __nv_fp8_storage_t s = *reinterpret_cast<const uint8_t*>(p);
      return __half2float(
          __half(__nv_cvt_fp8_to_halfraw(s, t == ncclFloat8e4m3 ? __NV_E4M3 : __NV_E5M2)));
    }
    default:
      return 0;
  }
}

// Stores v (an exactly representable value; integers wrap like the GPU's arithmetic).
inline void put(ncclDataType_t t, void* base, size_t i, double v) {
  char* p = static_cast<char*>(base) + i * type_size(t);
  int64_t iv = static_cast<int64_t>(v);
  switch (t) {
    case ncclInt8: {
      int8_t x = static_cast<int8_t>(iv);
      std::memcpy(p, &x, 1);
      return;
    }
    case ncclUint8: {
      uint8_t x = static_cast<uint8_t>(iv);
      std::memcpy(p, &x, 1);
      return;
    }
    case ncclInt32: {
      int32_t x = static_cast<int32_t>(iv);
      std::memcpy(p, &x, 4);
      return;
    }
    case ncclUint32: {
      uint32_t x = static_cast<uint32_t>(iv);
      std::memcpy(p, &x, 4);
      return;
    }
    case ncclInt64:
      std::memcpy(p, &iv, 8);
      return;
    case ncclUint64: {
      uint64_t x = static_cast<uint64_t>(iv);
      std::memcpy(p, &x, 8);
      return;
    }
    case ncclFloat32: {
      float x = static_cast<float>(v);
      std::memcpy(p, &x, 4);
      return;
    }
    case ncclFloat64:
      std::memcpy(p, &v, 8);
      return;
    case ncclFloat16: {
      uint16_t x = __half_raw(__float2half_rn(static_cast<float>(v))).x;
      std::memcpy(p, &x, 2);
      return;
    }
    case ncclBfloat16: {
      uint16_t x = __nv_bfloat16_raw(__float2bfloat16_rn(static_cast<float>(v))).x;
      std::memcpy(p, &x, 2);
      return;
    }
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: {
      uint8_t x = __nv_cvt_float_to_fp8(static_cast<float>(v), __NV_SATFINITE,
                                        t == ncclFloat8e4m3 ? __NV_E4M3 : __NV_E5M2);
      std::memcpy(p, &x, 1);
      return;
    }
    default:
      return;
  }
}

// What rank `r` contributes at index i: small integers, so every type holds every
// partial result exactly (fp8 sums of 8 ranks stay <= 8; products are powers of two).
inline double input_value(ncclDataType_t t, ncclRedOp_t op, int r, size_t i) {
  if (op == ncclProd) return 1 + static_cast<double>((r + i) % 2);
  const size_t m = is_fp8(t) ? 2 : 5;
  return static_cast<double>((static_cast<size_t>(r) * 3 + i * 7) % m);
}

}  // namespace ringside::test
