#include "bench/host_data.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace ringside::bench {

namespace {

constexpr DataType kTypes[] = {
    {ncclInt8, "int8", 1, false},        {ncclUint8, "uint8", 1, false},
    {ncclInt32, "int32", 4, false},      {ncclUint32, "uint32", 4, false},
    {ncclInt64, "int64", 8, false},      {ncclUint64, "uint64", 8, false},
    {ncclFloat16, "half", 2, true},      {ncclFloat32, "float", 4, true},
    {ncclFloat64, "double", 8, true},    {ncclBfloat16, "bfloat16", 2, true},
    {ncclFloat8e4m3, "f8e4m3", 1, true}, {ncclFloat8e5m2, "f8e5m2", 1, true},
};

struct Alias {
  const char* name;
  ncclDataType_t type;
};
constexpr Alias kAliases[] = {
    {"char", ncclInt8},           {"int", ncclInt32},           {"float16", ncclFloat16},
    {"fp16", ncclFloat16},        {"float32", ncclFloat32},     {"fp32", ncclFloat32},
    {"float64", ncclFloat64},     {"fp64", ncclFloat64},        {"bf16", ncclBfloat16},
    {"fp8_e4m3", ncclFloat8e4m3}, {"fp8_e5m2", ncclFloat8e5m2},
};

constexpr RedOp kOps[] = {
    {ncclSum, "sum"}, {ncclProd, "prod"}, {ncclMax, "max"},
    {ncclMin, "min"}, {ncclAvg, "avg"},   {kPreMulSum, "mulsum"},
};

uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff)
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(half);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// The 8-bit floats: e4m3 (bias 7, no infinity, largest 448) and e5m2 (bias 15,
// IEEE-like).  `mant_bits` tells them apart.
double fp8_to_double(uint8_t b, int mant_bits) {
  const int exp_bits = 7 - mant_bits;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int exp = (b >> mant_bits) & ((1 << exp_bits) - 1);
  const int mant = b & ((1 << mant_bits) - 1);
  const double sign = (b & 0x80u) ? -1.0 : 1.0;
  if (mant_bits == 3 && exp == 15 && mant == 7) return std::nan("");
  if (mant_bits == 2 && exp == 31) return mant ? std::nan("") : sign * HUGE_VAL;
  const double frac = static_cast<double>(mant) / (1 << mant_bits);
  if (exp == 0) return sign * std::ldexp(frac, 1 - bias);
  return sign * std::ldexp(1.0 + frac, exp - bias);
}

// Nearest code, ties to even, saturating to the largest finite value (as the
// device's reductions do).
uint8_t double_to_fp8(double v, int mant_bits) {
  const uint8_t sign = std::signbit(v) ? 0x80u : 0;
  const double a = std::fabs(v);
  if (std::isnan(v)) return static_cast<uint8_t>(sign | 0x7fu);  // NaN in both formats
  const uint8_t max_code = mant_bits == 3 ? 0x7eu : 0x7bu;
  uint8_t best = 0;
  for (uint8_t c = 1; c <= max_code; ++c) {  // codes of one sign grow with their value
    const double here = fp8_to_double(c, mant_bits);
    if (here > a) {
      const double below = fp8_to_double(best, mant_bits);
      const bool up = here - a < a - below || (here - a == a - below && (c & 1u) == 0);
      return static_cast<uint8_t>(sign | (up ? c : best));
    }
    best = c;
  }
  return static_cast<uint8_t>(sign | max_code);
}

template <typename T>
void put(void* base, size_t i, T v) {
  std::memcpy(static_cast<char*>(base) + i * sizeof(T), &v, sizeof(T));
}
template <typename T>
T get(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}

// Integer stores wrap modulo 2^bits, as device arithmetic does.
template <typename T>
T wrap(double v) {
  return static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(v)));
}

}  // namespace

const DataType* find_dtype(std::string_view name) {
  for (const DataType& t : kTypes) {
    if (name == t.name) return &t;
  }
  for (const Alias& a : kAliases) {
    if (name == a.name) return &dtype_of(a.type);
  }
  return nullptr;
}

const DataType& dtype_of(ncclDataType_t type) {
  for (const DataType& t : kTypes) {
    if (t.nccl == type) return t;
  }
  throw std::invalid_argument("unsupported ncclDataType_t " +
                              std::to_string(static_cast<int>(type)));
}

std::span<const DataType> all_dtypes() {
  return kTypes;
}

const RedOp* find_redop(std::string_view name) {
  for (const RedOp& o : kOps) {
    if (name == o.name) return &o;
  }
  return nullptr;
}

std::span<const RedOp> all_redops() {
  return kOps;
}

std::string_view dtype_choices() {
  return "int8|uint8|int32|uint32|int64|uint64|half|float|double|bfloat16|f8e4m3|f8e5m2|all "
         "(aliases char int float16 fp16 float32 fp32 float64 fp64 bf16 fp8_e4m3 fp8_e5m2)";
}

std::string_view redop_choices() {
  return "sum|prod|max|min|avg|mulsum|all";
}

void store_value(ncclDataType_t type, void* base, size_t i, double v) {
  switch (type) {
    case ncclInt8:
      put(base, i, wrap<int8_t>(v));
      break;
    case ncclUint8:
      put(base, i, wrap<uint8_t>(v));
      break;
    case ncclInt32:
      put(base, i, wrap<int32_t>(v));
      break;
    case ncclUint32:
      put(base, i, wrap<uint32_t>(v));
      break;
    case ncclInt64:
      put(base, i, wrap<int64_t>(v));
      break;
    case ncclUint64:
      put(base, i, wrap<uint64_t>(v));
      break;
    case ncclFloat16:
      put(base, i, float_to_half(static_cast<float>(v)));
      break;
    case ncclFloat32:
      put(base, i, static_cast<float>(v));
      break;
    case ncclFloat64:
      put(base, i, v);
      break;
    case ncclBfloat16:
      put(base, i, float_to_bf16(static_cast<float>(v)));
      break;
    case ncclFloat8e4m3:
      put(base, i, double_to_fp8(v, 3));
      break;
    case ncclFloat8e5m2:
      put(base, i, double_to_fp8(v, 2));
      break;
    default:
      throw std::invalid_argument("store_value: unsupported datatype");
  }
}

double load_value(ncclDataType_t type, const void* base, size_t i) {
  switch (type) {
    case ncclInt8:
      return get<int8_t>(base, i);
    case ncclUint8:
      return get<uint8_t>(base, i);
    case ncclInt32:
      return get<int32_t>(base, i);
    case ncclUint32:
      return get<uint32_t>(base, i);
    case ncclInt64:
      return static_cast<double>(get<int64_t>(base, i));
    case ncclUint64:
      return static_cast<double>(get<uint64_t>(base, i));
    case ncclFloat16:
      return half_to_float(get<uint16_t>(base, i));
    case ncclFloat32:
      return get<float>(base, i);
    case ncclFloat64:
      return get<double>(base, i);
    case ncclBfloat16:
      return bf16_to_float(get<uint16_t>(base, i));
    case ncclFloat8e4m3:
      return fp8_to_double(get<uint8_t>(base, i), 3);
    case ncclFloat8e5m2:
      return fp8_to_double(get<uint8_t>(base, i), 2);
    default:
      throw std::invalid_argument("load_value: unsupported datatype");
  }
}

double as_type(ncclDataType_t type, double value) {
  unsigned char buf[8];
  store_value(type, buf, 0, value);
  return load_value(type, buf, 0);
}

bool values_match(const DataType& type, ncclRedOp_t op, double got, double expected) {
  const bool fp8 = type.size == 1 && type.is_float;
  const bool sums = op == ncclSum || op == ncclAvg || op == kPreMulSum;
  if (fp8 && sums) {
    // Partial sums round to 2 or 3 mantissa bits wherever the device adds them.
    const double rel = type.nccl == ncclFloat8e4m3 ? 0.25 : 0.5;
    return std::fabs(got - expected) <= rel * std::max(1.0, std::fabs(expected));
  }
  if (op != ncclAvg) return got == as_type(type.nccl, expected);
  // avg divides on the device; integer types may truncate or round.
  if (!type.is_float) return std::fabs(got - expected) <= 1.0;
  const double rel = type.nccl == ncclFloat64   ? 1e-12
                     : type.nccl == ncclFloat32 ? 1e-6
                     : type.nccl == ncclFloat16 ? 2e-3
                                                : 1.6e-2;
  return std::fabs(got - expected) <= rel * std::max(1.0, std::fabs(expected));
}

double premul_scalar(int rank) {
  return 1.0 + rank % 2;
}

double InputGen::operator()(int rank, size_t index) const {
  const uint64_t mix =
      index * 7u + static_cast<uint64_t>(rank) * 13u + static_cast<uint64_t>(rep) * 5u;
  if (!reduction) return static_cast<double>(mix % 128u);
  switch (op) {
    case ncclProd:
      // Exactly one rank contributes a 2 to each element: the product is 2 in every type.
      return ((index + static_cast<uint64_t>(rank) + static_cast<uint64_t>(rep)) %
                  static_cast<uint64_t>(nranks) ==
              0)
                 ? 2.0
                 : 1.0;
    case ncclMax:
    case ncclMin:
      return static_cast<double>(mix % 64u);
    default:
      return static_cast<double>(mix % (fp8 ? 2u : 4u));
  }
}

double InputGen::reduced(size_t index) const {
  const auto input = [&](int r) {
    return op == kPreMulSum ? premul_scalar(r) * (*this)(r, index) : (*this)(r, index);
  };
  double acc = input(0);
  for (int r = 1; r < nranks; ++r) {
    const double v = input(r);
    switch (op) {
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = std::max(acc, v);
        break;
      case ncclMin:
        acc = std::min(acc, v);
        break;
      default:
        acc += v;
        break;
    }
  }
  if (op == ncclAvg) acc /= nranks;
  return acc;
}

}  // namespace ringside::bench
