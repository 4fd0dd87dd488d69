// base/dtype.h — element types of stored tensors, with their names and sizes.
//
// The names are the safetensors spellings ("F32", "BF16", ...). Shared by the safetensors reader
// (base/safetensors.h) and the kernels (WeightView), which need the type and its size but not the
// file format.
#pragma once

#include <cstddef>

namespace mineru {

enum class DType { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool };

// "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"; "?" for a value outside
// the enum.
inline const char* DTypeName(DType t) {
  switch (t) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kF64:
      return "F64";
    case DType::kI64:
      return "I64";
    case DType::kI32:
      return "I32";
    case DType::kI16:
      return "I16";
    case DType::kI8:
      return "I8";
    case DType::kU8:
      return "U8";
    case DType::kBool:
      return "BOOL";
  }
  return "?";
}

// Bytes per element (1 for a value outside the enum).
inline size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
      return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      return 1;
  }
  return 1;
}

}  // namespace mineru
