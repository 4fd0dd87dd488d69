// image/resize.h — Pillow-exact geometric operations on RgbImage.
//
// Preconditions (source non-empty, sizes positive, box inside the image) are programmer errors
// checked with MINERU_CHECK; validate user input before calling.
#pragma once

#include "image/image.h"

namespace mineru {

// Byte-for-byte Pillow `Image.resize((out_w, out_h), Image.BICUBIC)` on an RGB image: separable
// cubic convolution (a = -0.5, support 2 scaled by the downscale factor, i.e. antialiased),
// 22-bit fixed-point coefficients, horizontal pass first, then vertical. Returns a copy when the
// size is unchanged.
RgbImage ResizeBicubic(const RgbImage& src, int out_w, int out_h);

// Same, resampling only the source rectangle box = (x0, y0, x1, y1) (floats, Pillow's `box=`
// argument): requires 0 <= x0 <= x1 <= width, 0 <= y0 <= y1 <= height.
RgbImage ResizeBicubicBox(const RgbImage& src, int out_w, int out_h, float x0, float y0, float x1, float y1);

// Pillow `Image.crop((x0, y0, x1, y1))`: the result is max(0, x1-x0) x max(0, y1-y0); parts of
// the rectangle outside the source are filled with 0 (black).
RgbImage Crop(const RgbImage& src, int x0, int y0, int x1, int y1);

// Pillow `Image.rotate(angle_ccw, expand=True)` for multiples of 90 degrees (counter-clockwise;
// any multiple of 90, negative allowed): exact transposes, 90/270 swap width and height.
RgbImage Rotate90s(const RgbImage& src, int angle_ccw);

}  // namespace mineru
