// pipeline/common/equation_blocks.h — do_handle_equation_block, identical in mineru-vl-utils 0.1.17
// and 1.2.1: an equation_block covering > 1 equation (each > 0.9 inside) replaces them by one
// equation with CombineEquations content (the block's bbox and angle); equation_blocks are dropped.
#pragma once

#include <vector>

#include "pipeline/doc/blocks.h"

namespace mineru::pipeline {

std::vector<ContentBlock> HandleEquationBlocks(std::vector<ContentBlock> blocks);

}  // namespace mineru::pipeline
